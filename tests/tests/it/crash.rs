//! The crash harness over the real binaries: kill -9 of `weft run
//! --no-daemon` and of weftd, then what must hold — no stage process
//! outlives the process that ran it, a resume right after a daemon crash
//! continues the run (the killed daemon still a zombie) with every
//! committed stage's files in the run directory, and a resume that cannot
//! start leaves the run as it was and says why.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use weft::model::EventKind;
use weft::model::RunStatus;
use weft::os::process::is_alive;
use weft::store::{Home, RunRecord, Store};
use weft_tests::{Run, Sandbox, binary, lcg, side_effect_chain};

fn home(sb: &Sandbox) -> Home {
    Home::at(sb.path().join("home"))
}

fn record(sb: &Sandbox, run_id: &str) -> Option<RunRecord> {
    Store::open_read_only(&home(sb))
        .ok()
        .and_then(|s| s.find_run(run_id).ok())
}

/// The only run in the sandbox, once it is recorded.
fn only_run(sb: &Sandbox) -> Option<RunRecord> {
    let store = Store::open_read_only(&home(sb)).ok()?;
    store
        .list_runs(&Default::default())
        .ok()?
        .into_iter()
        .next()
}

fn events(sb: &Sandbox, run_id: &str) -> Vec<EventKind> {
    Store::open_read_only(&home(sb))
        .and_then(|s| s.events(run_id, 0, None))
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

fn sigkill(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `weft ARGS` and fails the test if it has not ended within `limit`
/// (a hang is the bug some of these tests guard against).
fn run_within(sb: &Sandbox, args: &[&str], limit: Duration) -> Run {
    let mut child = sb
        .weft()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn weft: {e}"));
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().ok();
            panic!(
                "`weft {}` did not end within {limit:?}; stderr: {}",
                args.join(" "),
                out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                    .unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Run::from(
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("weft output: {e}")),
    )
}

/// A stage that records its shell's pid and a background child's pid, then
/// waits until `go` exists and writes its side effect.
const HOLDS: &str = r#"digraph Hold { start [shape=Mdiamond]; exit [shape=Msquare]
  hold [shape=parallelogram, script="if [ ! -f go ]; then sleep 1000 & echo $! > child.pid; echo $$ > stage.pid; while [ ! -f go ]; do sleep 0.05; done; fi; echo ran >> side.log"]
  start -> hold -> exit }"#;

/// Both processes of the `hold` stage die soon after their executor did.
fn stage_processes_die(sb: &Sandbox) {
    let stage = read_pid(&sb.path().join("stage.pid")).unwrap_or_else(|| panic!("stage.pid"));
    let child = read_pid(&sb.path().join("child.pid")).unwrap_or_else(|| panic!("child.pid"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while (is_alive(stage) || is_alive(child)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let survivors: Vec<u32> = [stage, child]
        .into_iter()
        .filter(|p| is_alive(*p))
        .collect();
    // Clean up before failing, so a failure leaves nothing behind.
    for pid in &survivors {
        sigkill(*pid);
    }
    assert!(
        survivors.is_empty(),
        "stage processes {survivors:?} outlived their executor"
    );
}

#[test]
fn no_stage_process_survives_a_killed_no_daemon_run_and_resume_runs_the_stage_once() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", HOLDS);
    let mut weft = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    wait_until("the stage runs", Duration::from_secs(30), || {
        read_pid(&sb.path().join("stage.pid")).is_some()
    });
    weft.kill().unwrap_or_else(|e| panic!("kill -9 weft: {e}"));
    weft.wait().unwrap_or_else(|e| panic!("reap weft: {e}"));
    stage_processes_die(&sb);

    std::fs::write(sb.path().join("go"), "").unwrap_or_else(|e| panic!("go: {e}"));
    let run = only_run(&sb).unwrap_or_else(|| panic!("the run was recorded"));
    let resumed = run_within(
        &sb,
        &["resume", "--no-daemon", &run.id],
        Duration::from_secs(60),
    );
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let side = std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default();
    assert_eq!(side, "ran\n", "the resumed stage ran once");
}

#[test]
fn no_stage_process_survives_a_killed_daemon() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", HOLDS);
    let started = sb.run(&["run", "--detach", "wf.fabro"]);
    assert_eq!(started.code, 0, "{}", started.stderr);
    wait_until("the stage runs", Duration::from_secs(30), || {
        read_pid(&sb.path().join("stage.pid")).is_some() && sb.path().join("child.pid").is_file()
    });
    let daemon =
        read_pid(&sb.path().join("home/run/weftd.pid")).unwrap_or_else(|| panic!("weftd.pid"));
    sigkill(daemon);
    wait_until("weftd is dead", Duration::from_secs(10), || {
        !is_alive(daemon)
    });
    stage_processes_die(&sb);
}

/// The reaper of the executor `executor`: its child whose command line
/// names `weft-reaper` (see weft::exec::reaper).
fn reaper_of(executor: u32) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let parent = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let after = stat.rsplit(')').next()?.to_string();
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                });
            parent == Some(executor) && String::from_utf8_lossy(&cmdline).contains("weft-reaper")
        })
}

/// The fallback behind the reaper: when the reaper was killed too, the
/// resume kills the group its crashed executor recorded before running the
/// stage again.
#[test]
fn a_resume_kills_a_leftover_stage_group_before_running_the_stage_again() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", HOLDS);
    let mut weft = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    // The shell creates stage.pid before it writes the number: wait for the
    // number.
    wait_until("the stage runs", Duration::from_secs(30), || {
        read_pid(&sb.path().join("stage.pid")).is_some()
    });
    let stage = read_pid(&sb.path().join("stage.pid")).unwrap_or_else(|| panic!("stage.pid"));
    let reaper = reaper_of(weft.id()).unwrap_or_else(|| panic!("weft has a reaper"));
    sigkill(reaper);
    wait_until("the reaper is dead", Duration::from_secs(10), || {
        !is_alive(reaper)
    });
    weft.kill().unwrap_or_else(|e| panic!("kill -9 weft: {e}"));
    weft.wait().unwrap_or_else(|e| panic!("reap weft: {e}"));
    assert!(
        is_alive(stage),
        "without its reaper the group outlives weft"
    );
    std::fs::remove_file(sb.path().join("stage.pid")).unwrap_or_else(|e| panic!("{e}"));

    let run = only_run(&sb).unwrap_or_else(|| panic!("recorded"));
    let resume = Running(Some(
        sb.weft()
            .args(["resume", "--no-daemon", &run.id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}")),
    ));
    wait_until("the stage runs again", Duration::from_secs(30), || {
        read_pid(&sb.path().join("stage.pid")).is_some()
    });
    let survived = is_alive(stage);
    if survived {
        sigkill(stage);
    }
    assert!(!survived, "the resume killed the leftover stage first");
    std::fs::write(sb.path().join("go"), "").unwrap_or_else(|e| panic!("go: {e}"));
    assert_eq!(resume.wait().code(), Some(0));
    let side = std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default();
    assert_eq!(side, "ran\n", "the stage's side effect happened once");
}

/// A resume through the daemon while a `--no-daemon` process still runs the
/// run is refused at once, and leaves the run to that process.
#[test]
fn resuming_a_run_another_process_is_running_is_refused_and_changes_nothing() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", HOLDS);
    let weft = Running(Some(
        sb.weft()
            .args(["run", "--no-daemon", "wf.fabro"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}")),
    ));
    wait_until("the stage runs", Duration::from_secs(30), || {
        read_pid(&sb.path().join("stage.pid")).is_some()
    });
    let run = only_run(&sb).unwrap_or_else(|| panic!("recorded"));
    let before = events(&sb, &run.id).len();
    let refused = run_within(&sb, &["resume", &run.id], Duration::from_secs(60));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("still running in process"),
        "says why: {}",
        refused.stderr
    );
    let after = record(&sb, &run.id).unwrap_or_else(|| panic!("run"));
    assert_eq!(after.status, RunStatus::Running, "the run was left alone");
    let kinds = events(&sb, &run.id);
    assert!(
        !kinds
            .iter()
            .any(|k| matches!(k, EventKind::RunFailed { .. })),
        "no run.failed: {kinds:?}"
    );
    assert!(kinds.len() >= before);

    std::fs::write(sb.path().join("go"), "").unwrap_or_else(|e| panic!("go: {e}"));
    let status = weft.wait();
    assert_eq!(status.code(), Some(0), "the first process finished the run");
    assert_eq!(
        record(&sb, &run.id).map(|r| r.status),
        Some(RunStatus::Succeeded)
    );
}

/// A resume that fails once queued (here: the run directory's workflow is
/// gone) keeps the run resumable and records why, so `weft resume` ends.
#[test]
fn a_resume_that_cannot_start_leaves_the_run_as_it_was_and_says_why() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", HOLDS);
    let mut weft = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    wait_until("the stage runs", Duration::from_secs(30), || {
        read_pid(&sb.path().join("stage.pid")).is_some()
    });
    weft.kill().unwrap_or_else(|e| panic!("kill -9: {e}"));
    weft.wait().unwrap_or_else(|e| panic!("reap: {e}"));
    let run = only_run(&sb).unwrap_or_else(|| panic!("recorded"));
    std::fs::remove_file(run.run_dir.join("graph.fabro"))
        .unwrap_or_else(|e| panic!("remove graph.fabro: {e}"));

    let resumed = run_within(&sb, &["resume", &run.id], Duration::from_secs(60));
    assert_ne!(resumed.code, 0, "{}", resumed.stderr);
    let after = record(&sb, &run.id).unwrap_or_else(|| panic!("run"));
    assert_eq!(
        after.status,
        RunStatus::Interrupted,
        "still resumable, not failed"
    );
    let reason = events(&sb, &run.id)
        .into_iter()
        .rev()
        .find_map(|k| match k {
            EventKind::RunInterrupted { reason, .. } => Some(reason),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a run.interrupted event says why"));
    assert!(
        reason.contains("resume could not start") && reason.contains("graph.fabro"),
        "{reason}"
    );
}

// ----- kill -9 of weftd, then an immediate resume --------------------------

/// A weftd in the foreground on a sandbox's home, as the test's child: when
/// killed and not yet reaped, it stays a zombie.
fn start_daemon(sb: &Sandbox) -> Child {
    let home = home(sb);
    let child = Command::new(binary("weftd"))
        .arg("--foreground")
        .env("WEFT_HOME", home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn weftd: {e}"));
    let socket = home.root().join("run/weftd.sock");
    wait_until("weftd listens", Duration::from_secs(30), || {
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    child
}

fn side_lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("side.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn weftd_killed_then_resumed_at_once_finishes_the_run_without_repeating_committed_stages() {
    const NODES: usize = 20;
    let mut interrupted = 0;
    for seed in 0..20u64 {
        let sb = Sandbox::new();
        sb.write("wf.fabro", side_effect_chain(NODES));
        let mut daemon = start_daemon(&sb);
        let started = sb.run(&["run", "--detach", "wf.fabro"]);
        assert_eq!(started.code, 0, "seed {seed}: {}", started.stderr);
        let run_id = started.stdout.trim().to_string();
        // By progress, not by time: after `after_stages` side effects.
        let after_stages = usize::try_from(lcg(seed) % (NODES as u64 - 1)).unwrap_or(0);
        wait_until("progress", Duration::from_secs(60), || {
            side_lines(sb.path()).len() >= after_stages
        });
        // kill -9, and no reaping yet: the dead daemon stays a zombie while
        // the resume runs, as it does right after a crash.
        sigkill(daemon.id());
        // Dead, and its last thread gone (the leader turns zombie while
        // other threads may still hold the listening socket for a moment).
        let socket = home(&sb).root().join("run/weftd.sock");
        wait_until("weftd is dead", Duration::from_secs(10), || {
            !is_alive(daemon.id()) && std::os::unix::net::UnixStream::connect(&socket).is_err()
        });
        let before = Store::open_read_only(&home(&sb))
            .and_then(|s| s.stages(&run_id))
            .unwrap_or_default();
        if record(&sb, &run_id).is_some_and(|r| r.status != RunStatus::Succeeded) {
            interrupted += 1;
        }
        // As if the writer had not got to a committed stage's files yet.
        let run_dir = record(&sb, &run_id)
            .map(|r| r.run_dir)
            .unwrap_or_else(|| panic!("seed {seed}: the run is recorded"));
        if let Some(done) = before
            .iter()
            .rev()
            .find(|s| s.status == "succeeded" && s.node_id.starts_with('n'))
        {
            let dir = run_dir.join("nodes").join(&done.node_id);
            for name in ["status.json", "script_timing.json", "stderr.log"] {
                let _ = std::fs::remove_file(dir.join(name));
            }
        }
        let resumed = run_within(
            &sb,
            &["resume", &run_id, "--json"],
            Duration::from_secs(120),
        );
        let _ = daemon.wait();
        let status = record(&sb, &run_id).map(|r| r.status);
        if before.iter().all(|s| s.status != "running") && status == Some(RunStatus::Succeeded) {
            // Ended before the kill (or between stages): nothing to redo.
            if resumed.code != 0 {
                assert!(
                    resumed.stderr.contains("already succeeded"),
                    "seed {seed}: {}",
                    resumed.stderr
                );
            }
        } else {
            assert_eq!(resumed.code, 0, "seed {seed}: {}", resumed.stderr);
        }
        assert_eq!(status, Some(RunStatus::Succeeded), "seed {seed}");
        // Every stage's own files are in the run directory, whether the
        // writer wrote them or the resume restored them from the rows.
        for i in 0..NODES {
            let dir = run_dir.join("nodes").join(format!("n{i}"));
            for name in [
                "status.json",
                "script_invocation.json",
                "script_timing.json",
                "stdout.log",
                "stderr.log",
            ] {
                assert!(
                    dir.join(name).is_file(),
                    "seed {seed}: n{i} has no {name} after the resume"
                );
            }
            let status: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join("status.json")).unwrap_or_default(),
            )
            .unwrap_or_else(|e| panic!("seed {seed}: n{i}'s status.json: {e}"));
            assert_eq!(status["status"], "succeeded", "seed {seed}: n{i}");
        }
        let side = side_lines(sb.path());
        for i in 0..NODES {
            let node = format!("n{i}");
            let count = side.iter().filter(|l| **l == node).count();
            let committed = before
                .iter()
                .any(|s| s.node_id == node && s.status == "succeeded");
            let in_flight = before
                .iter()
                .any(|s| s.node_id == node && s.status == "running");
            if committed {
                assert_eq!(count, 1, "seed {seed}: {node} was committed and ran again");
            } else if in_flight {
                assert!((1..=2).contains(&count), "seed {seed}: {node} ran {count}");
            } else {
                assert_eq!(count, 1, "seed {seed}: {node} ran {count} times");
            }
        }
    }
    assert!(
        interrupted >= 15,
        "only {interrupted} of 20 kills landed mid-run"
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
