//! Configuration files as `weft` reads them: unknown keys of run.toml and
//! settings.toml are warned about with their position, and neither file
//! may be a FIFO or a device.

use weft_tests::{Sandbox, Weftd};

const QUICK: &str = r#"digraph Quick { start [shape=Mdiamond]; exit [shape=Msquare]
  say [shape=parallelogram, script="echo hi"]
  start -> say -> exit }"#;

#[test]
fn unknown_keys_of_run_toml_are_warned_about_with_their_position() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", QUICK);
    sb.write(
        "run.toml",
        "_version = 1\n[workflow]\ngraph = \"wf.fabro\"\n[run]\ngoal = \"g\"\n  working_dr = \".\"\n[run.sandbox.daytona]\nauto_stop_interval = 60\n",
    );
    let run = sb.run(&["run", "--no-daemon", "run.toml"]);
    assert_eq!(run.code, 0, "a warning does not stop the run: {run:?}");
    assert!(
        run.stderr.contains(
            "warning[unknown_key]: unknown key `run.working_dr` in run.toml; it is ignored"
        ) && run.stderr.contains("run.toml:6:3"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("warning[unsupported_key]: `run.sandbox.daytona` is a Fabro setting")
            && run.stderr.contains("run.toml:7:14"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_keys_of_settings_toml_are_warned_about_with_their_position() {
    let sb = Sandbox::new();
    sb.write("wf.fabro", QUICK);
    sb.write(
        "home/settings.toml",
        "max_concurrent_runs = 2\nmax_concurent_runs = 3\n[llm]\nmax_retries = 1\n",
    );
    for args in [
        vec!["run", "--no-daemon", "wf.fabro"],
        vec!["model", "list"],
        vec!["daemon", "start"],
    ] {
        let run = sb.run(&args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains(
                "warning[unknown_key]: unknown key `max_concurent_runs` in settings.toml"
            ) && run.stderr.contains("settings.toml:2:1"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("max_retries") && !run.stderr.contains("`max_concurrent_runs`"),
            "keys the daemon or the LLM settings read are known: {}",
            run.stderr
        );
    }
}

#[test]
fn a_daemon_logs_the_unknown_keys_of_settings_toml_when_it_starts() {
    // A daemon started by a service manager, not by `weft`: only its log
    // can say that a setting is misspelt.
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "max_concurent_runs = 3\n");
    let daemon = Weftd::start(&sb);
    let log = daemon.log_text();
    assert!(
        log.contains("settings.toml:1:1: unknown key `max_concurent_runs` in settings.toml"),
        "{log}"
    );
}

#[test]
fn a_run_configuration_that_is_a_fifo_is_refused_without_blocking() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("run.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(made.success());
    // Reading a FIFO nobody writes to would block for good: give up (and
    // fail) after a while rather than hang the test run.
    let mut child = sb
        .weft()
        .args(["run", "--no-daemon", "run.toml"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("weft blocked reading a FIFO as its run configuration");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
}
