//! The workflows in `examples/` are what newcomers read to learn the
//! language, and the demo runs some of them: every one must validate, both
//! through the library and through the real `weft` binary.
//!
//! The binary test needs `target/debug/weft`, which `cargo test -p
//! weft-tests` does not build (the `weft` dev-dependency brings in the
//! library only). `make test` builds it first; by hand, run
//! `cargo build -p weft` before the tests.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use weft::lang::{Handler, LoadOptions, Severity, Workflow};
use weft_tests::Sandbox;

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
    let files = weft_tests::files_under(dir, &["fabro", "dot"]);
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

#[test]
fn examples_together_show_every_node_type_and_the_main_features() {
    // A newcomer should find each construct in at least one example.
    let mut handlers = BTreeSet::new();
    let mut features = BTreeSet::new();
    for path in workflow_files(&examples_dir()) {
        let wf = load(&path);
        let Some(graph) = wf.graph else { continue };
        if graph.attrs.contains("model_stylesheet") {
            features.insert("model_stylesheet");
        }
        if wf
            .file_refs
            .iter()
            .any(|r| r.key == "prompt" && r.error.is_none())
        {
            features.insert("@file prompt");
        }
        for node in &graph.nodes {
            handlers.insert(node.handler.name());
            let text = |key: &str| node.attrs.text(key).map(|v| v.into_owned());
            if !node.subgraph_classes.is_empty() {
                features.insert("subgraph class");
            }
            if node.handler == Handler::Command
                && text("output_schema").as_deref() == Some("routing")
            {
                features.insert("routing schema on a command");
            }
            if node.attrs.value("goal_gate").and_then(|v| v.as_bool()) == Some(true)
                && node.attrs.contains("retry_target")
            {
                features.insert("goal gate with retry target");
            }
        }
        for edge in &graph.edges {
            if edge.attrs.value("freeform").and_then(|v| v.as_bool()) == Some(true) {
                features.insert("freeform edge");
            }
            if edge.condition().is_some() {
                features.insert("edge condition");
            }
        }
    }
    let all_handlers: BTreeSet<&str> = Handler::ALL.iter().map(|h| h.name()).collect();
    let missing: Vec<_> = all_handlers.difference(&handlers).collect();
    assert!(
        missing.is_empty(),
        "no example uses these node types: {missing:?}"
    );
    for feature in [
        "model_stylesheet",
        "@file prompt",
        "subgraph class",
        "routing schema on a command",
        "goal gate with retry target",
        "freeform edge",
        "edge condition",
    ] {
        assert!(features.contains(feature), "no example shows: {feature}");
    }
}

#[test]
fn weft_validate_json_reports_every_example_valid() {
    let files = workflow_files(&examples_dir());
    // Hermetic: the sandbox gives the binary its own temp WEFT_HOME, so it
    // never reads or writes the real user data dir.
    let sandbox = Sandbox::new();
    let output = sandbox
        .weft()
        .arg("validate")
        .arg("--json")
        .args(&files)
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
