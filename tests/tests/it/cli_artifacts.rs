//! `weft artifacts` through the real binary, over a run recorded by a real
//! `weft run`. The run loop does not capture artifacts yet, so the tests
//! capture them with the library's `capture` against the sandbox's
//! `WEFT_HOME`, as the loop will after each stage.

use std::path::Path;

use weft::engine::artifacts::{ArtifactRules, CaptureReport, capture};
use weft::store::{Blobs, Home, Store};
use weft_tests::Sandbox;

/// One command stage that leaves two reports and an unrelated file behind.
const REPORTS: &str = r#"digraph Reports {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    build [shape=parallelogram, script="mkdir -p out && printf 'v1' > out/report.txt && printf '{}' > out/data.json && printf x > notes.txt"]
    start -> build -> exit
}
"#;

/// Runs the workflow and returns the run id.
fn run_reports(sb: &Sandbox) -> String {
    sb.write("reports.fabro", REPORTS);
    let run = sb.run(&["run", "--no-daemon", "reports.fabro", "--json"]);
    assert_eq!(run.code, 0, "the run succeeds: {run:?}");
    let conclusion: serde_json::Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("--json prints the conclusion ({e}): {run:?}"));
    conclusion["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the conclusion names its run: {conclusion}"))
        .to_string()
}

/// Captures `out/**` from the run's working directory as stage
/// `node@visit`, as the run loop does after a stage.
fn capture_stage(sb: &Sandbox, run_id: &str, node: &str, visit: u32) -> CaptureReport {
    let home = Home::at(sb.path().join("home"));
    let mut store = Store::open(&home).unwrap_or_else(|e| panic!("open the store: {e}"));
    let work_dir = store
        .run(run_id)
        .unwrap_or_else(|e| panic!("read the run: {e}"))
        .unwrap_or_else(|| panic!("run {run_id} is recorded"))
        .work_dir;
    let rules = ArtifactRules::new(&["out/**".to_string()])
        .unwrap_or_else(|e| panic!("valid patterns: {e}"));
    capture(
        &rules,
        &work_dir,
        &mut store,
        &Blobs::new(&home),
        run_id,
        node,
        visit,
    )
    .unwrap_or_else(|e| panic!("capture: {e}"))
}

/// A run whose `build@1` captured both reports and whose later `check@1`
/// captured a changed `out/report.txt` (v2).
fn run_with_two_versions(sb: &Sandbox) -> String {
    let run_id = run_reports(sb);
    let first = capture_stage(sb, &run_id, "build", 1);
    assert_eq!(first.captured.len(), 2, "{first:?}");
    sb.write("out/report.txt", "v2, longer");
    let second = capture_stage(sb, &run_id, "check", 1);
    assert_eq!(
        (second.captured.len(), second.unchanged),
        (1, 1),
        "only the changed report is recorded again: {second:?}"
    );
    run_id
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[test]
fn artifacts_lists_each_captured_version_with_its_stage() {
    let sb = Sandbox::new();
    let run_id = run_with_two_versions(&sb);
    let table = sb.run(&["artifacts", &run_id[..10]]);
    assert_eq!(table.code, 0, "{table:?}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "a header and three rows: {}", table.stdout);
    // Columns are separated by at least two spaces (a size is `2 B`).
    let cells: Vec<Vec<&str>> = lines
        .iter()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(cells[0], ["PATH", "STAGE", "SIZE", "HASH", "CAPTURED"]);
    let rows: Vec<(&str, &str, &str)> = cells[1..]
        .iter()
        .map(|row| (row[0], row[1], row[2]))
        .collect();
    assert_eq!(
        rows,
        [
            ("out/data.json", "build@1", "2 B"),
            ("out/report.txt", "build@1", "2 B"),
            ("out/report.txt", "check@1", "10 B"),
        ],
        "capture order; notes.txt does not match `out/**`"
    );
    assert!(
        cells[1..]
            .iter()
            .all(|row| row[3].len() == 12 && row[4].ends_with('Z')),
        "a short hash and a UTC time: {}",
        table.stdout
    );
}

#[test]
fn artifacts_json_is_an_array_of_records() {
    let sb = Sandbox::new();
    let run_id = run_with_two_versions(&sb);
    let json = sb.run(&["artifacts", &run_id, "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let records: Vec<serde_json::Value> = serde_json::from_str(&json.stdout).expect("a JSON array");
    assert_eq!(records.len(), 3);
    let latest = &records[2];
    assert_eq!(latest["run_id"], run_id.as_str());
    assert_eq!(latest["node_id"], "check");
    assert_eq!(latest["visit"], 1);
    assert_eq!(latest["path"], "out/report.txt");
    assert_eq!(latest["size"], 10);
    assert_eq!(
        latest["blob_hash"].as_str().map(str::len),
        Some(64),
        "the full hex hash: {latest}"
    );
    assert!(latest["created_at"].as_str().is_some(), "{latest}");
}

#[test]
fn artifacts_cp_copies_the_latest_version_to_a_file_or_into_a_directory() {
    let sb = Sandbox::new();
    let run_id = run_with_two_versions(&sb);
    // The working copy moves on; the copy comes from the blob store.
    sb.write("out/report.txt", "v3, never captured");

    let file = sb.path().join("copy.txt");
    let to_file = sb.run(&["artifacts", &run_id, "--cp", "out/report.txt", "copy.txt"]);
    assert_eq!(to_file.code, 0, "{to_file:?}");
    assert_eq!(read(&file), "v2, longer", "the latest captured version");
    assert!(
        to_file.stdout.contains("check@1"),
        "says which version it copied: {}",
        to_file.stdout
    );

    std::fs::create_dir(sb.path().join("into")).expect("a destination directory");
    let into_dir = sb.run(&["artifacts", &run_id, "--cp", "./out/data.json", "into"]);
    assert_eq!(into_dir.code, 0, "{into_dir:?}");
    assert_eq!(
        read(&sb.path().join("into/data.json")),
        "{}",
        "an existing directory receives the file under its own name"
    );
}

#[test]
fn an_unknown_artifact_path_exits_two_listing_what_exists() {
    let sb = Sandbox::new();
    let run_id = run_with_two_versions(&sb);
    let missing = sb.run(&["artifacts", &run_id, "--cp", "out/nope.txt", "x"]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing
            .stderr
            .contains("no artifact `out/nope.txt`; it has: out/data.json, out/report.txt"),
        "{}",
        missing.stderr
    );
    assert!(!sb.path().join("x").exists(), "nothing is written");
}

#[test]
fn a_run_without_artifacts_says_so_and_unknown_runs_exit_two() {
    let sb = Sandbox::new();
    let run_id = run_reports(&sb);
    let table = sb.run(&["artifacts", &run_id]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table.stdout.contains("captured no artifacts"),
        "{}",
        table.stdout
    );
    let json = sb.run(&["artifacts", &run_id, "--json"]);
    assert_eq!((json.code, json.stdout.trim()), (0, "[]"), "{json:?}");
    let unknown = sb.run(&["artifacts", "ZZZZ"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("no run matches"),
        "{}",
        unknown.stderr
    );
}
