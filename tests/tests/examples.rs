//! The workflows in `examples/` are what newcomers read to learn the
//! language, and the demo runs some of them: every one must validate, both
//! through the library and through the real `weft` binary.
//!
//! The binary test needs `target/debug/weft`, which `cargo test -p
//! weft-tests` does not build (the `weft` dev-dependency brings in the
//! library only). Build it first: `cargo build -p weft`.

use std::path::{Path, PathBuf};
use std::process::Command;

use weft::lang::{LoadOptions, Severity, Workflow};

/// Fewer files than this means the walk went wrong, not that the examples
/// are fine: the examples directory holds at least the eight required themes.
const MIN_EXAMPLES: usize = 8;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
}

/// Every workflow file under `dir`, recursively, sorted for stable output.
fn workflow_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path();
            if path.is_dir() {
                walk(&path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("fabro" | "dot")
            ) {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    assert!(
        files.len() >= MIN_EXAMPLES,
        "expected at least {MIN_EXAMPLES} workflows under {}, found {}: {files:?}",
        dir.display(),
        files.len()
    );
    files
}

fn load(path: &Path) -> Workflow {
    Workflow::load(path, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `file:line:col: rule: message` for each diagnostic of at least `min`.
fn findings(files: &[PathBuf], min: Severity) -> Vec<String> {
    let mut out = Vec::new();
    for path in files {
        let wf = load(path);
        for d in wf.diagnostics.iter().filter(|d| d.severity >= min) {
            let (line, col) = d.span.map_or((0, 0), |s| (s.line, s.column));
            out.push(format!(
                "{}:{line}:{col}: {} [{}]: {}",
                path.display(),
                d.severity.as_str(),
                d.rule,
                d.message
            ));
        }
    }
    out
}

#[test]
fn every_example_validates_without_errors() {
    let files = workflow_files(&examples_dir());
    let errors = findings(&files, Severity::Error);
    assert!(
        errors.is_empty(),
        "examples must be valid workflows; fix the example, not the validator:\n{}",
        errors.join("\n")
    );
}

#[test]
fn examples_have_no_warnings() {
    // Examples are teaching material: a warning in one teaches a habit the
    // validator is trying to discourage.
    let files = workflow_files(&examples_dir());
    let warnings = findings(&files, Severity::Warning);
    assert!(
        warnings.is_empty(),
        "examples should not draw warnings:\n{}",
        warnings.join("\n")
    );
}

#[test]
fn examples_cover_the_required_themes() {
    // The README and the demo refer to these by name.
    let dir = examples_dir();
    for name in [
        "plan-approve-implement.fabro",
        "implement-test-fix.fabro",
        "parallel-review.fabro",
        "multi-model.fabro",
        "sub-workflow.fabro",
        "children/lint-and-test.fabro",
        "ci-pipeline.fabro",
        "goal-gate-retry.fabro",
        "interview.fabro",
    ] {
        assert!(dir.join(name).is_file(), "examples/{name} is missing");
    }
}

/// `target/debug/weft`, found next to this test executable
/// (`target/debug/deps/examples-HASH`), since `CARGO_BIN_EXE_weft` only
/// exists inside the `weft` package itself.
fn weft_binary() -> PathBuf {
    let exe = std::env::current_exe()
        .unwrap_or_else(|e| panic!("cannot locate the test executable: {e}"));
    let profile_dir = exe.parent().and_then(Path::parent).unwrap_or_else(|| {
        panic!(
            "test executable {} is not under target/<profile>/deps",
            exe.display()
        )
    });
    let bin = profile_dir.join(format!("weft{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the weft binary is missing at {}; build it first with `cargo build -p weft` \
         (`cargo test -p weft-tests` builds only the library)",
        bin.display()
    );
    bin
}

#[test]
fn weft_validate_json_reports_every_example_valid() {
    let files = workflow_files(&examples_dir());
    // Hermetic: the binary must not read or write the real user data dir.
    let home =
        tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temp WEFT_HOME: {e}"));
    let output = Command::new(weft_binary())
        .arg("validate")
        .arg("--json")
        .args(&files)
        .env("WEFT_HOME", home.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run weft: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);

    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        files.len(),
        "`validate --json` prints one line per file\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let mut invalid = Vec::new();
    for line in &lines {
        let report: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        if report["valid"] != serde_json::Value::Bool(true) {
            let file = report["file"].as_str().unwrap_or("?");
            let diags = report["diagnostics"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            for d in diags.iter().filter(|d| d["severity"] == "error") {
                invalid.push(format!(
                    "{file}:{}:{}: [{}] {}",
                    d["line"], d["column"], d["rule"], d["message"]
                ));
            }
            if diags.is_empty() {
                invalid.push(format!("{file}: valid=false without diagnostics: {line}"));
            }
        }
    }
    assert!(
        invalid.is_empty(),
        "`weft validate --json` rejected examples:\n{}",
        invalid.join("\n")
    );
    assert!(
        output.status.success(),
        "all examples are valid, so weft must exit 0; got {}\nstderr:\n{stderr}",
        output.status
    );
}
