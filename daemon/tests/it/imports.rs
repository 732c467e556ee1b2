//! Imports through the command line: `weft graph` prints the workflow with
//! its imports spliced in, and `weft validate` reports a broken import at
//! the placeholder. Fixtures: `tests/fixtures/imports/`.

// A test that cannot set itself up should stop there, with the reason.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/imports")
        .join(name)
}

/// Runs `weft` with a throwaway home, so nothing touches the real one.
fn weft(args: &[&str], file: &Path) -> Output {
    let home = tempfile::tempdir().expect("temp home");
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .arg(file)
        .env("WEFT_HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("weft runs")
}

#[test]
fn weft_graph_prints_the_spliced_graph() {
    let out = weft(&["graph"], &fixture("main.fabro"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("plan -> \"review.check\"")
            && stdout.contains("\"review.check\" -> exit")
            && stdout.contains("\"review.fix\" -> \"review.check\""),
        "the imported nodes replace the placeholder:\n{stdout}"
    );
    assert!(
        !stdout.contains("import="),
        "the placeholder is gone:\n{stdout}"
    );
}

#[test]
fn weft_validate_names_the_import_cycle() {
    let out = weft(&["validate"], &fixture("cycle_a.fabro"));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "a cycle makes the workflow invalid");
    assert!(
        report.contains("cycle_a.fabro → cycle_b.fabro → cycle_a.fabro"),
        "{report}"
    );
    assert!(report.contains("import_cycle"), "{report}");
}
