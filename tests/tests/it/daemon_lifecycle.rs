//! weftd starting, stopping and crashing under the CLI that follows its
//! runs, over the real binaries: kill -9 and an immediate restart, `weft
//! daemon stop` while a client follows, SIGTERM to a following `weft run`,
//! a lost write-ahead log, what an invalid workflow prints, following a
//! resumed run, and a headless machine's notifications.

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft::model::RunStatus;
use weft::store::{Home, Store};
use weft_tests::{RawClient, Sandbox, Weftd, wait_for_status};

const GATE: &str = r#"digraph G { start [shape=Mdiamond]; exit [shape=Msquare]
  approve [shape=hexagon, label="Ship it?"]
  ship [shape=parallelogram, script="echo shipped > shipped.txt"]
  start -> approve
  approve -> ship [label="[S] Ship"]
  approve -> exit [label="[H] Hold"]
  ship -> exit }"#;

/// A stage that records its pid, then waits for a `go` file (30 s at most).
const SLOW: &str = r#"digraph S { start [shape=Mdiamond]; exit [shape=Msquare]
  first [shape=parallelogram, script="echo first >> side.log"]
  slow [shape=parallelogram, script="echo $$ > slow.pid; for i in $(seq 300); do [ -f go ] && break; sleep 0.1; done; echo slow >> side.log"]
  start -> first -> slow -> exit }"#;

fn home(sb: &Sandbox) -> Home {
    Home::at(sb.path().join("home"))
}

fn status(home: &Home, run_id: &str) -> Option<RunStatus> {
    Store::open_read_only(home)
        .ok()
        .and_then(|s| s.find_run(run_id).ok())
        .map(|r| r.status)
}

/// Waits for `condition`, failing with `what` after 60 s.
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The only run recorded, once there is one.
fn only_run(home: &Home) -> String {
    let mut id = None;
    wait_until("a run to be recorded", || {
        id = Store::open_read_only(home)
            .and_then(|s| s.list_runs(&Default::default()))
            .ok()
            .and_then(|runs| runs.into_iter().next())
            .map(|r| r.id);
        id.is_some()
    });
    id.unwrap_or_default()
}

fn kill(pid: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
}

/// `weft run ARGS` following its run through the daemon, output captured.
fn follow(sb: &Sandbox, args: &[&str]) -> Child {
    sb.weft()
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn weft run: {e}"))
}

/// Waits for `child` to exit, at most `limit` (a hang detector, far above
/// what the command needs), and returns its output.
fn finish(child: Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("wait: {e}")),
        Err(_) => {
            kill(pid, "-KILL");
            panic!("pid {pid} did not exit within {}s", limit.as_secs());
        }
    }
}

#[test]
fn kill_9_an_immediate_restart_an_answer_and_daemon_stop_all_complete() {
    let sb = Sandbox::new();
    sb.write("gate.fabro", GATE);
    let home = home(&sb);
    // `weft run` starts weftd (its child) and follows the run to its gate.
    let follower = follow(&sb, &["gate.fabro"]);
    let run_id = only_run(&home);
    wait_for_status(&home, &run_id, RunStatus::Blocked);
    let pid_file = home.root().join("run/weftd.pid");
    let first: u32 = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no weftd pid"));
    kill(first, "-KILL");
    // A new daemon at once, whose parent (this test) does not reap it until
    // the end: a zombie once it exits.
    let mut second = Weftd::spawn(&sb, &[]);
    wait_until("the new weftd to answer", || {
        assert!(
            second.child.try_wait().ok().flatten().is_none(),
            "the new weftd refused to start:\n{}",
            second.log_text()
        );
        second.answers()
    });
    // The killed daemon's follower notices and says so.
    let out = finish(follower, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2));
    // Answered at once, while the new daemon resumes the run.
    let answered = sb.run(&["answer", &run_id, "--key", "S"]);
    assert_eq!(answered.code, 0, "{answered:?}\n{}", second.log_text());
    wait_for_status(&home, &run_id, RunStatus::Succeeded);
    assert!(sb.path().join("shipped.txt").is_file());

    let stop = sb
        .weft()
        .args(["daemon", "stop"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let out = finish(stop, Duration::from_secs(25));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        second.child.try_wait().ok().flatten().is_some(),
        "`daemon stop` returned once the daemon had exited"
    );
    let status = sb.run(&["daemon", "status"]);
    assert_eq!(status.code, 3, "not running: {status:?}");
}

#[test]
fn a_daemon_waits_for_the_lock_of_one_that_is_exiting_instead_of_refusing() {
    let sb = Sandbox::new();
    let mut first = Weftd::start(&sb);
    // Stopped, it holds the lock and does not answer: as a daemon does
    // between kill -9 and the kernel releasing its lock.
    first.signal("-STOP");
    let mut second = Weftd::spawn(&sb, &[]);
    wait_until("the new weftd to wait for the lock", || {
        assert!(
            second.child.try_wait().ok().flatten().is_none(),
            "the new weftd refused to start:\n{}",
            second.log_text()
        );
        second.log_text().contains("waiting up to")
    });
    first.signal("-KILL");
    let _ = first.child.wait();
    wait_until("the new weftd to answer", || second.answers());
    // A live daemon is still refused at once.
    let third = sb.weft().args(["daemon", "status"]).output();
    assert!(third.is_ok_and(|o| o.status.success()));
    let refused = std::process::Command::new(weft_tests::binary("weftd"))
        .arg("--foreground")
        .env("WEFT_HOME", home(&sb).root())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains(&second.child.id().to_string()),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn daemon_stop_while_a_client_follows_prints_the_interruption_once_and_exits_130() {
    let sb = Sandbox::new();
    sb.write("slow.fabro", SLOW);
    let daemon = Weftd::start(&sb);
    let follower = follow(&sb, &["slow.fabro", "--json"]);
    wait_until("the slow stage", || sb.path().join("slow.pid").is_file());
    let stop = sb.run(&["daemon", "stop"]);
    assert_eq!(stop.code, 0, "{stop:?}");
    let out = finish(follower, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(
        stderr.matches("interrupted").count(),
        1,
        "the interruption, once: {stderr}"
    );
    assert!(!stderr.contains("error"), "{stderr}");
    let conclusion: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no conclusion ({e}): {stderr}"));
    assert_eq!(conclusion["status"], "interrupted");
    drop(daemon);
}

#[test]
fn sigterm_to_a_following_weft_run_cancels_the_run_and_exits_130() {
    let sb = Sandbox::new();
    sb.write("slow.fabro", SLOW);
    let daemon = Weftd::start(&sb);
    let home = home(&sb);
    let follower = follow(&sb, &["slow.fabro", "--json"]);
    wait_until("the slow stage", || sb.path().join("slow.pid").is_file());
    kill(follower.id(), "-TERM");
    let out = finish(follower, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let conclusion: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no conclusion ({e}): {stderr}"));
    assert_eq!(conclusion["status"], "cancelled");
    let run_id = only_run(&home);
    assert_eq!(status(&home, &run_id), Some(RunStatus::Cancelled));
    let slow: u32 = std::fs::read_to_string(sb.path().join("slow.pid"))
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(0);
    wait_until("the cancelled stage's process to go", || {
        !Path::new(&format!("/proc/{slow}")).exists()
            || std::fs::read_to_string(format!("/proc/{slow}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    });
    drop(daemon);
}

/// Whether the database's main file, read without its write-ahead log,
/// holds run `run_id`.
fn main_file_has(home: &Home, run_id: &str) -> bool {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let copy = dir.path().join("copy.db");
    if std::fs::copy(home.db_path(), &copy).is_err() {
        return false;
    }
    rusqlite::Connection::open(&copy)
        .and_then(|c| {
            c.query_row("SELECT count(*) FROM runs WHERE id = ?1", [run_id], |row| {
                row.get::<_, i64>(0)
            })
        })
        .is_ok_and(|n| n == 1)
}

#[test]
fn an_idle_daemon_checkpoints_so_a_deleted_wal_loses_no_finished_run() {
    let sb = Sandbox::new();
    let home = home(&sb);
    let mut daemon = Weftd::start(&sb);
    let mut client = RawClient::connect(&daemon.socket());
    let reply = client.call(
        1,
        "run.start",
        json!({"workflow": {"source": "digraph T { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"},
               "work_dir": sb.path()}),
    );
    let run_id = reply["result"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_string();
    wait_for_status(&home, &run_id, RunStatus::Succeeded);
    // Idle now: the log is copied into the main file.
    wait_until("the finished run in the main database file", || {
        main_file_has(&home, &run_id)
    });
    daemon.signal("-KILL");
    let _ = daemon.child.wait();
    let wal = home.root().join("weft.db-wal");
    let _ = std::fs::remove_file(&wal);
    let _ = std::fs::remove_file(home.root().join("weft.db-shm"));
    let listed = sb.run(&["ps", "--no-daemon", "--all", "--json"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(listed.stdout.contains(&run_id), "{listed:?}");
}

#[test]
fn a_database_whose_wal_was_lost_is_named_as_such_not_as_an_older_weft() {
    let sb = Sandbox::new();
    let home = home(&sb);
    std::fs::create_dir_all(home.runs_dir().join("20261202-01JRUN"))
        .unwrap_or_else(|e| panic!("{e}"));
    // What a store that never checkpointed leaves once its log is deleted:
    // a WAL-mode main file with no schema.
    let conn = rusqlite::Connection::open(home.db_path()).unwrap_or_else(|e| panic!("{e}"));
    let _: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let listed = sb.run(&["ps", "--no-daemon"]);
    assert_eq!(listed.code, 2, "{listed:?}");
    assert!(
        listed.stderr.contains("write-ahead log") && !listed.stderr.contains("older Weft"),
        "{}",
        listed.stderr
    );
    let daemon = std::process::Command::new(weft_tests::binary("weftd"))
        .arg("--foreground")
        .env("WEFT_HOME", home.root())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!daemon.status.success(), "weftd refuses to open it");
    assert!(
        String::from_utf8_lossy(&daemon.stderr).contains("write-ahead log"),
        "{}",
        String::from_utf8_lossy(&daemon.stderr)
    );
}

const INVALID: &str = r#"digraph Broken { start [shape=Mdiamond]; exit [shape=Msquare]
  build [shape=parallelogram, script="echo hi", colour="red"]
  start -> build -> tset
}"#;

#[test]
fn an_invalid_workflow_run_through_the_daemon_prints_what_validate_prints() {
    let sb = Sandbox::new();
    sb.write("broken.fabro", INVALID);
    let daemon = Weftd::start(&sb);
    let direct = sb.run(&["run", "--no-daemon", "broken.fabro"]);
    let through = sb.run(&["run", "broken.fabro"]);
    assert_eq!(through.code, 2, "{through:?}");
    assert!(
        through.stderr.contains("broken.fabro:3:") && through.stderr.contains("error["),
        "rustc-style, with the file: {}",
        through.stderr
    );
    assert!(!through.stderr.contains("0:0:"), "{}", through.stderr);
    assert_eq!(
        through.stderr, direct.stderr,
        "the same diagnostics as without the daemon"
    );
    drop(daemon);
}

#[test]
fn events_follow_of_a_resumed_run_goes_past_its_old_end_to_the_live_one() {
    let sb = Sandbox::new();
    let daemon = Weftd::start(&sb);
    let home = home(&sb);
    let mut client = RawClient::connect(&daemon.socket());
    let reply = client.call(
        1,
        "run.start",
        json!({"workflow": {"source": SLOW}, "work_dir": sb.path()}),
    );
    let run_id = reply["result"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_string();
    wait_until("the slow stage", || sb.path().join("slow.pid").is_file());
    let cancelled = client.call(2, "run.cancel", json!({"run": run_id}));
    assert!(cancelled["result"].is_object(), "{cancelled}");
    wait_for_status(&home, &run_id, RunStatus::Cancelled);
    std::fs::remove_file(sb.path().join("slow.pid")).unwrap_or_else(|e| panic!("{e}"));
    let resumed = client.call(3, "run.resume", json!({"run": run_id}));
    assert!(resumed["result"].is_object(), "{resumed}");
    wait_until("the resumed slow stage", || {
        sb.path().join("slow.pid").is_file()
    });
    let mut follower = sb
        .weft()
        .args(["events", &run_id, "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let stdout = follower
        .stdout
        .take()
        .unwrap_or_else(|| panic!("no stdout"));
    let (lines, printed) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line);
        }
    });
    // Once it has printed the run's old end, let the live run finish.
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains("run.cancelled")) {
        let line = printed
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("no run.cancelled line ({e}); saw {seen:?}"));
        seen.push(line);
    }
    sb.write("go", "");
    let out = finish(follower, Duration::from_secs(60));
    seen.extend(printed.iter());
    assert_eq!(out.status.code(), Some(0), "{seen:?}");
    assert!(
        seen.last().is_some_and(|l| l.contains("run.completed")),
        "followed past the old end to the live one: {seen:#?}"
    );
    assert_eq!(status(&home, &run_id), Some(RunStatus::Succeeded));
}

#[test]
fn a_headless_daemon_logs_a_notification_failure_once() {
    let sb = Sandbox::new();
    let bus = format!("unix:path={}", sb.path().join("no-bus").display());
    let daemon = Weftd::start_with(&sb, &[("DBUS_SESSION_BUS_ADDRESS", &bus)]);
    let home = home(&sb);
    let mut client = RawClient::connect(&daemon.socket());
    // Each finished run calls for a notification; none can be shown.
    for i in 0..5 {
        let reply = client.call(
            i,
            "run.start",
            json!({"workflow": {"source": "digraph T { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"},
                   "work_dir": sb.path()}),
        );
        let run = reply["result"]["run_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        wait_for_status(&home, &run, RunStatus::Succeeded);
        wait_until("the notification attempt", || {
            daemon.log_text().contains("notification not shown")
        });
    }
    daemon.signal("-TERM");
    let mut daemon = daemon;
    let _ = daemon.child.wait();
    let log = daemon.log_text();
    assert_eq!(log.matches("notification not shown").count(), 1, "{log}");
}

/// The frames of the progress spinner.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

#[test]
fn a_follower_on_a_terminal_draws_no_spinner_frame_after_the_interruption() {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    let sb = Sandbox::new();
    sb.write("slow.fabro", SLOW);
    let daemon = Weftd::start(&sb);
    // `script` gives `weft run` a terminal, so it draws its spinner.
    let command = format!("'{}' run slow.fabro", weft_tests::binary("weft").display());
    let mut follower = std::process::Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .current_dir(sb.path())
        .env("WEFT_HOME", &daemon.home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("script (util-linux) is needed: {e}"));
    let mut stdout = follower
        .stdout
        .take()
        .unwrap_or_else(|| panic!("no stdout"));
    let screen = Arc::new(Mutex::new(Vec::new()));
    let reader = std::thread::spawn({
        let screen = Arc::clone(&screen);
        move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                screen
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend_from_slice(&chunk[..n]);
            }
        }
    });
    let text = || {
        String::from_utf8_lossy(
            &screen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_owned()
    };
    wait_until("the spinner of the slow stage", || text().contains(SPINNER));
    let stop = sb.run(&["daemon", "stop"]);
    assert_eq!(stop.code, 0, "{stop:?}");
    let out = finish(follower, Duration::from_secs(60));
    let _ = reader.join();
    let screen = text();
    assert_eq!(out.status.code(), Some(130), "{screen}");
    let end = screen
        .find("interrupted after")
        .unwrap_or_else(|| panic!("no interruption line: {screen}"));
    let after = &screen[end..];
    assert!(
        !after.contains(SPINNER),
        "a spinner frame after the end: {after:?}"
    );
    assert_eq!(screen.matches("interrupted after").count(), 1, "{screen}");
}
