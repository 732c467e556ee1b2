//! The CLI as a client of weftd: `weft run` (the default path) starts the
//! daemon when needed and follows the run there; `--detach`, `weft cancel`,
//! `weft answer`, `weft questions`, `weft daemon`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use weft_tests::{Sandbox, json};

#[test]
fn weft_run_goes_through_the_daemon_with_the_callers_directory_and_environment() {
    let sb = Sandbox::new();
    sb.write(
        "sub/wf.fabro",
        r#"digraph E { start [shape=Mdiamond]; exit [shape=Msquare]
           look [shape=parallelogram, script="pwd > seen.txt; echo \"$MY_SETTING\" >> seen.txt; echo \"key=${MY_API_KEY:-hidden}\" >> seen.txt"]
           start -> look -> exit }"#,
    );
    let out = sb
        .weft()
        .current_dir(sb.path().join("sub"))
        .env("MY_SETTING", "from-the-caller")
        .env("MY_API_KEY", "sk-secret")
        .args(["run", "wf.fabro", "--json"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("started weftd"),
        "the daemon was started and the user told: {stderr}"
    );
    let c = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(c["status"], "succeeded");
    assert_eq!(c["stages"].as_array().map(Vec::len), Some(3));
    let seen = std::fs::read_to_string(sb.path().join("sub/seen.txt")).unwrap_or_default();
    let lines: Vec<&str> = seen.lines().collect();
    assert!(
        lines[0].ends_with("/sub"),
        "ran in the caller's directory: {seen}"
    );
    assert_eq!(lines[1], "from-the-caller", "with the caller's environment");
    assert_eq!(lines[2], "key=hidden", "secrets are still filtered");

    let status = sb.run(&["daemon", "status", "--json"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    let daemon_pid = json(&status.stdout)["pid"].as_u64();
    let store = weft::store::Store::open_read_only(&weft::store::Home::at(sb.path().join("home")))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = store
        .find_run(c["run_id"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(daemon_pid.is_some(), "the daemon answers status");
    assert_eq!(run.status, weft::model::RunStatus::Succeeded);
    let stop = sb.run(&["daemon", "stop"]);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert_eq!(
        sb.run(&["daemon", "status"]).code,
        3,
        "status says it is gone"
    );
}

#[test]
fn weft_answer_answers_the_gate_a_following_weft_run_waits_on() {
    let sb = Sandbox::new();
    sb.write(
        "gate.fabro",
        r#"digraph G { start [shape=Mdiamond]; exit [shape=Msquare]
           approve [shape=hexagon, label="Ship it?"]
           ship [shape=parallelogram, script="echo shipped > shipped.txt"]
           start -> approve
           approve -> ship [label="[S] Ship"]
           approve -> exit [label="[H] Hold"]
           ship -> exit }"#,
    );
    let follower = sb
        .weft()
        .args(["run", "gate.fabro", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let question = loop {
        let listed = sb.run(&["questions", "--json"]);
        if listed.code == 0
            && let Some(q) = json(&listed.stdout)
                .as_array()
                .and_then(|a| a.first().cloned())
        {
            break q;
        }
        assert!(Instant::now() < deadline, "no question appeared");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(question["text"], "Ship it?");
    let run_id = question["run_id"].as_str().unwrap_or_default().to_string();
    let answered = sb.run(&["answer", &run_id[..8], "--key", "s"]);
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    let out = follower
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("weft answer"),
        "the follower said how to answer"
    );
    assert_eq!(
        json(&String::from_utf8_lossy(&out.stdout))["status"],
        "succeeded"
    );
    assert!(sb.path().join("shipped.txt").is_file());
    let again = sb.run(&["answer", &run_id, "--key", "s"]);
    assert_ne!(again.code, 0, "no open question is left to answer");
}

#[test]
fn a_detached_run_returns_its_id_at_once_and_weft_cancel_stops_it() {
    let sb = Sandbox::new();
    sb.write(
        "slow.fabro",
        r#"digraph S { start [shape=Mdiamond]; exit [shape=Msquare]
           nap [shape=parallelogram, script="sleep 30"]
           start -> nap -> exit }"#,
    );
    let started = sb.run(&["run", "slow.fabro", "--detach", "--json"]);
    assert_eq!(started.code, 0, "{}", started.stderr);
    let run_id = json(&started.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let events = sb.run(&["events", &run_id, "--json"]);
        if events.stdout.contains("\"stage.started\"") && events.stdout.contains("\"nap\"") {
            break;
        }
        assert!(Instant::now() < deadline, "the run did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cancelled = sb.run(&["cancel", &run_id]);
    assert_eq!(cancelled.code, 0, "{}", cancelled.stderr);
    let followed = sb.run(&["events", &run_id, "--follow"]);
    assert_eq!(followed.code, 0, "{}", followed.stderr);
    assert!(
        followed.stdout.contains("run.cancelled"),
        "{}",
        followed.stdout
    );
}

#[test]
fn ps_starts_the_daemon_whose_reconciliation_shows_a_crashed_run_as_interrupted() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap_or_else(|e| panic!("{e}"));
    sb.write("home/settings.toml", "resume_interrupted = false\n");
    let workflow = sb.write(
        "slow.fabro",
        r#"digraph Slow { start [shape=Mdiamond]; exit [shape=Msquare]
           wait [shape=parallelogram, script="echo $$ > pgid; sleep 30"]
           start -> wait -> exit }"#,
    );
    // A run in the weft process, killed mid-stage: the database still says
    // `running`.
    let mut child = sb
        .weft()
        .args(["run", "--no-daemon"])
        .arg(&workflow)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let pgid = sb.path().join("pgid");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !pgid.is_file() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let group = std::fs::read_to_string(&pgid).unwrap_or_default();
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", group.trim())])
        .status();

    let offline = sb.run(&["ps", "--json", "--no-daemon"]);
    assert_eq!(json(&offline.stdout)[0]["status"], "running", "{offline:?}");
    assert!(
        !offline.stderr.contains("weftd"),
        "--no-daemon never starts the daemon: {}",
        offline.stderr
    );

    let listed = sb.run(&["ps", "--json"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(
        listed.stderr.contains("started weftd"),
        "ps started the daemon and said so: {}",
        listed.stderr
    );
    assert_eq!(
        json(&listed.stdout)[0]["status"],
        "interrupted",
        "the daemon reconciled the dead run before listing it"
    );
    let run_id = json(&listed.stdout)[0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let logs = sb.run(&["logs", &run_id, "wait"]);
    assert_eq!(logs.code, 0, "{logs:?}");
    assert!(
        logs.stdout.contains("== wait@1 (interrupted"),
        "{}",
        logs.stdout
    );
    let events = sb.run(&["events", &run_id, "--follow"]);
    assert_eq!(events.code, 0, "{events:?}");
    assert!(
        events.stdout.contains("run.interrupted"),
        "following an interrupted run ends at its interruption: {}",
        events.stdout
    );
}

#[test]
fn weft_notifications_pauses_and_resumes_weftd_and_says_so() {
    let sb = Sandbox::new();
    let absent = sb.run(&["notifications", "status"]);
    assert_eq!(absent.code, 3, "no daemon, nothing to pause: {absent:?}");
    assert!(absent.stdout.contains("weftd is not running"), "{absent:?}");
    let absent = sb.run(&["notifications", "pause", "--json"]);
    assert_eq!(absent.code, 3, "{absent:?}");
    assert_eq!(json(&absent.stdout), serde_json::json!({"running": false}));

    let _weftd = weft_tests::Weftd::start(&sb);
    let status = sb.run(&["notifications", "status"]);
    assert_eq!(
        (status.code, status.stdout.as_str()),
        (0, "notifications are on\n")
    );
    let paused = sb.run(&["notifications", "pause"]);
    assert_eq!(
        (paused.code, paused.stdout.as_str()),
        (
            0,
            "notifications paused until `weft notifications resume` or weftd restarts\n"
        )
    );
    let status = sb.run(&["notifications", "status", "--json"]);
    assert_eq!(json(&status.stdout), serde_json::json!({"paused": true}));
    let daemon = sb.run(&["daemon", "status", "--json"]);
    assert_eq!(json(&daemon.stdout)["notifications_paused"], true);
    let resumed = sb.run(&["notifications", "resume"]);
    assert_eq!(resumed.stdout, "notifications resumed\n");
    let status = sb.run(&["notifications", "status", "--json"]);
    assert_eq!(json(&status.stdout), serde_json::json!({"paused": false}));
}
