//! Hostile workflows through the real `weft` binary: each used to crash it,
//! hang it, fill its memory, or flood the terminal (issue 14). Each must
//! now end at once with a clear diagnostic. The hostile inputs are built
//! here; docs/performance.md has their time and memory before and after.

// A test that cannot set itself up should stop there, with the reason.
#![allow(clippy::expect_used)]

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use weft_tests::{Run, Sandbox};

/// Waits for `child`, reading its output as it comes; a hung child (the
/// failure these tests guard against) is killed after a generous deadline
/// and fails the test.
fn finish(child: Child, what: &str) -> Run {
    let pid = child.id().to_string();
    let (done, finished) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let output = child.wait_with_output();
        let _ = done.send(());
        output
    });
    if finished.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = Command::new("kill").args(["-9", &pid]).status();
        let _ = waiter.join();
        panic!("{what} did not finish within a minute");
    }
    let output = waiter.join().expect("waiter").expect("output");
    Run::from(output)
}

fn spawn(sb: &Sandbox, args: &[&str]) -> Child {
    sb.weft()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft starts")
}

const HEAD: &str = "digraph G {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n";

#[test]
fn validate_reads_a_workflow_from_standard_input() {
    let sb = Sandbox::new();
    let mut child = sb
        .weft()
        .args(["validate", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft starts");
    let text = format!("{HEAD} start -> tset\n start -> exit\n}}\n");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let run = finish(child, "validate -");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(" --> <stdin>:4:11"),
        "positions name <stdin>: {}",
        run.stderr
    );
    assert!(
        run.stdout
            .starts_with("Workflow: G (3 nodes, 2 edges): invalid"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_fifo_as_the_workflow_is_refused_without_waiting_for_a_writer() {
    let sb = Sandbox::new();
    let made = Command::new("mkfifo")
        .arg(sb.path().join("flow.fabro"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let run = finish(
        spawn(&sb, &["validate", "flow.fabro"]),
        "validate of a FIFO",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("cannot read `flow.fabro`: it is not a regular file (it is a FIFO)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_device_as_the_workflow_is_refused_before_any_byte_is_read() {
    let sb = Sandbox::new();
    let run = finish(
        spawn(&sb, &["validate", "--json", "/dev/zero"]),
        "validate /dev/zero",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stdout
            .contains("it is not a regular file (it is a character device)"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_process_environment_never_reaches_the_graph() {
    let sb = Sandbox::new();
    sb.write(
        "flow.fabro",
        "digraph G { graph [goal=\"@/proc/self/environ\"]; start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }\n",
    );
    let mut cmd: Command = sb.weft();
    let output = cmd
        .args(["graph", "flow.fabro"])
        .env("WEFT_TEST_SECRET", "s3cr3t-value-from-the-environment")
        .output()
        .expect("weft runs");
    let run = Run::from(output);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        !run.stdout.contains("s3cr3t") && !run.stderr.contains("s3cr3t"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("error[file_outside_tree]") && run.stderr.contains("flow.fabro:1:25"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_syntax_error_deep_in_a_two_megabyte_line_prints_a_short_excerpt() {
    let sb = Sandbox::new();
    let line = format!("digraph G {{ {} $ }}\n", "a".repeat(1_999_987));
    sb.write("long.fabro", &line);
    let run = finish(
        spawn(&sb, &["validate", "long.fabro"]),
        "validate of a long line",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(" --> long.fabro:1:2000001"),
        "{}",
        &run.stderr[..run.stderr.len().min(500)]
    );
    assert!(
        run.stderr.len() < 1_000,
        "the 2 MB line is cut to a window, not printed twice: {} bytes",
        run.stderr.len()
    );
    assert!(run.stderr.contains("…aaaa"), "{}", run.stderr);
}

#[test]
fn warnings_about_twenty_thousand_attributes_grow_linearly() {
    let sb = Sandbox::new();
    let attrs: Vec<String> = (0..20_000).map(|i| format!("a{i}=\"v{i}\"")).collect();
    sb.write(
        "attrs.fabro",
        format!(
            "{HEAD} work [shape=parallelogram, script=\"true\", on_failure=\"exit\", {}]\n start -> work -> exit\n}}\n",
            attrs.join(", ")
        ),
    );
    let run = finish(
        spawn(&sb, &["validate", "attrs.fabro"]),
        "validate of 20,000 attributes",
    );
    assert_eq!(run.code, 0, "{}", &run.stderr[..run.stderr.len().min(500)]);
    assert!(
        run.stdout.contains("valid (20000 warnings)"),
        "{}",
        run.stdout
    );
    // About 500 bytes per warning; the whole 300 KB line per warning
    // (9.4 GB in all) before.
    assert!(
        run.stderr.len() < 20_000 * 1_000,
        "{} bytes of warnings",
        run.stderr.len()
    );
}

#[test]
fn nested_subgraphs_beyond_the_cap_are_an_error_not_a_crash() {
    let sb = Sandbox::new();
    sb.write(
        "deep.fabro",
        format!(
            "{HEAD} start -> exit\n{}{}\n}}\n",
            "{".repeat(100_000),
            "}".repeat(100_000)
        ),
    );
    let run = finish(
        spawn(&sb, &["validate", "deep.fabro"]),
        "validate of deep nesting",
    );
    assert_eq!(run.code, 1, "no abort: {run:?}");
    assert!(
        run.stderr
            .contains("error[nesting_too_deep]: subgraphs nest more than 256 levels deep"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_template_bomb_stops_with_a_clear_error() {
    let sb = Sandbox::new();
    sb.write(
        "bomb.fabro",
        format!(
            "{HEAD} p [shape=tab, prompt=\"{}xxxxxxxxxxxxxxxx{}\"]\n start -> p -> exit\n}}\n",
            "{% for a in range(1000) %}".repeat(4),
            "{% endfor %}".repeat(4)
        ),
    );
    let run = finish(
        spawn(&sb, &["validate", "bomb.fabro"]),
        "validate of a template bomb",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("error[template]: templates do too much work"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_file_importing_the_next_twice_ends_with_the_chain_named() {
    let sb = Sandbox::new();
    for i in 0..22 {
        let body = if i < 21 {
            format!(
                " a [import=\"b{n}.fabro\"]\n b [import=\"b{n}.fabro\"]\n start -> a -> b -> exit\n",
                n = i + 1
            )
        } else {
            " a [shape=parallelogram, script=\"true\"]\n start -> a -> exit\n".to_string()
        };
        sb.write(&format!("b{i}.fabro"), format!("{HEAD}{body}}}\n"));
    }
    let run = finish(
        spawn(&sb, &["validate", "b0.fabro"]),
        "validate of an import blow-up",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("error[import_too_large]")
            && run.stderr.contains("imports more than 256 files")
            && run.stderr.contains("b0.fabro (`a`) → b1.fabro (`a`) → "),
        "{}",
        &run.stderr[..run.stderr.len().min(2000)]
    );
}

#[test]
fn a_700_file_import_chain_is_an_error_not_a_crash() {
    let sb = Sandbox::new();
    for i in 0..700 {
        let body = if i < 699 {
            format!(" a [import=\"c{}.fabro\"]\n start -> a -> exit\n", i + 1)
        } else {
            " a [shape=parallelogram, script=\"true\"]\n start -> a -> exit\n".to_string()
        };
        sb.write(&format!("c{i}.fabro"), format!("{HEAD}{body}}}\n"));
    }
    let run = finish(
        spawn(&sb, &["validate", "c0.fabro"]),
        "validate of an import chain",
    );
    assert_eq!(run.code, 1, "no abort: {run:?}");
    assert!(
        run.stderr.contains("error[import_too_deep]")
            && run
                .stderr
                .contains("imports nest more than 16 levels deep: c0.fabro (`a`) → c1.fabro (`a`)"),
        "{}",
        run.stderr
    );
}
