//! Human gates as `weft run` shows them: without a terminal (how to answer,
//! with the real command), on a terminal through the daemon (the previous
//! stage's output), the wait and its default in every mode, the timeout
//! notice on its own line, and `--auto-approve`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use weft_tests::Sandbox;

/// A plan is printed, then a gate asks whether to ship it.
fn gate(timeout: &str, first: &str, second: &str) -> String {
    format!(
        r#"digraph Release {{
  start [shape=Mdiamond]
  exit  [shape=Msquare]
  plan  [shape=parallelogram, script="echo 'plan: add a cache'"]
  approve [shape=hexagon, label="Ship it?", timeout="{timeout}", human.default_choice="H"]
  ship  [shape=parallelogram, script="echo shipped > shipped.txt"]
  start -> plan -> approve
  approve -> {first}
  approve -> {second}
  ship -> exit
}}"#
    )
}

const SHIP: &str = r#"ship [label="[S] Ship it"]"#;
const HOLD: &str = r#"exit [label="[H] Hold"]"#;

/// Lines of a child's stderr, as they arrive.
fn stderr_lines(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            if send.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    receive
}

#[test]
fn without_a_terminal_a_gate_shows_its_context_wait_and_the_command_that_answers_it() {
    let sb = Sandbox::new();
    sb.write("gate.fabro", gate("10m", SHIP, HOLD));
    let mut follower = sb
        .weft()
        .args(["run", "gate.fabro"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let lines = stderr_lines(&mut follower);
    let mut shown = Vec::new();
    let command = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no answer command was shown: {shown:#?}"));
        shown.push(line.clone());
        if let Some((_, command)) = line.split_once("answer with: ") {
            break command.to_string();
        }
    };
    let text = shown.join("\n");
    assert!(
        text.contains("plan: add a cache"),
        "the previous output: {text}"
    );
    assert!(
        text.contains("? approve: Ship it?")
            && text.contains("[S] Ship it | [H] Hold")
            && text.contains("times out in 10m, then takes \"Hold\""),
        "question, options, wait and default: {text}"
    );
    // The command is the real one: run it as printed.
    let first = command.split("  (or").next().unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(words[..2], ["weft", "answer"], "{command}");
    assert_eq!(words[3..], ["--key", "S"], "{command}");
    let answered = sb.run(&words[1..]);
    assert_eq!(answered.code, 0, "{answered:?}");
    let status = follower.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(0));
    assert!(
        sb.path().join("shipped.txt").is_file(),
        "the answer shipped"
    );
}

#[test]
fn on_a_terminal_the_daemon_path_shows_the_previous_output_and_the_wait() {
    let sb = Sandbox::new();
    sb.write("gate.fabro", gate("10m", SHIP, HOLD));
    let weft = weft_tests::binary("weft");
    let mut screen = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("'{}' run gate.fabro", weft.display()),
            "/dev/null",
        ])
        .current_dir(sb.path())
        .env("WEFT_HOME", sb.path().join("home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("script (util-linux) runs weft on a terminal: {e}"));
    let mut stdout = screen.stdout.take().unwrap_or_else(|| panic!("stdout"));
    let (send, seen) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || send.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut text = String::new();
    while !text.contains("Choose [S/H]") {
        let chunk = seen
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no prompt: {text}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        text.contains("plan: add a cache"),
        "the previous output: {text}"
    );
    assert!(
        text.contains("(times out in 10m, then takes \"Hold\")"),
        "the wait and its default: {text}"
    );
    let mut stdin = screen.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let _ = stdin.write_all(b"s\r");
    let _ = stdin.flush();
    let status = screen.wait().unwrap_or_else(|e| panic!("{e}"));
    drop(stdin);
    assert_eq!(status.code(), Some(0));
    assert!(sb.path().join("shipped.txt").is_file());
}

#[test]
fn a_timeout_notice_starts_a_line_of_its_own_after_the_prompt() {
    let sb = Sandbox::new();
    sb.write("gate.fabro", gate("1s", SHIP, HOLD));
    // Stdin stays open and says nothing: the gate times out.
    let mut run = sb
        .weft()
        .args(["run", "--no-daemon", "gate.fabro"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stderr = String::new();
    run.stderr
        .take()
        .unwrap_or_else(|| panic!("stderr"))
        .read_to_string(&mut stderr)
        .unwrap_or_else(|e| panic!("{e}"));
    let status = run.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("(times out in 1s, then takes \"Hold\")\nAnswer (number, key or label): \n  ⏱ approve: no answer in time"),
        "the wait is shown and the notice does not run on from the prompt: {stderr}"
    );
    assert!(!sb.path().join("shipped.txt").exists(), "the default holds");
}

#[test]
fn auto_approve_takes_the_option_that_starts_with_an_approving_word() {
    for no_daemon in [true, false] {
        let sb = Sandbox::new();
        // Hold comes first; `Ship it` is the approval.
        sb.write("gate.fabro", gate("10m", HOLD, SHIP));
        let mut args = vec!["run", "gate.fabro", "--auto-approve"];
        if no_daemon {
            args.push("--no-daemon");
        }
        let run = sb.run(&args);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            sb.path().join("shipped.txt").is_file(),
            "no_daemon={no_daemon}: `[S] Ship it` was taken over `[H] Hold`: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("auto-approved: [S] Ship it"),
            "{}",
            run.stderr
        );
    }
}
