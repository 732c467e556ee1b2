use std::path::Path;
use std::process::Command;

use super::*;
use crate::store::{Home, NewRun, StageCommit, Store};

const BASE: &str = "0123456789abcdef0123456789abcdef01234567";

fn home() -> (tempfile::TempDir, Home) {
    let temp = tempfile::tempdir().expect("temp dir");
    let home = Home::at(temp.path().join("home"));
    (temp, home)
}

/// Creates run `id` with a manifest; `checkpointed` gives it the git facts
/// the engine writes, else the nulls of a run outside a repository.
fn run(store: &mut Store, home: &Home, id: &str, checkpointed: bool) -> RunDir {
    let dir = RunDir::create(&home.runs_dir(), id).expect("run dir");
    store
        .create_run(&NewRun {
            id: id.into(),
            workflow_name: "edit".into(),
            workflow_path: None,
            goal: None,
            run_dir: dir.path().to_path_buf(),
            work_dir: "/repo".into(),
            inputs: serde_json::Map::new(),
            options: serde_json::json!({}),
            labels: Vec::new(),
            node_count: 3,
            edge_count: 2,
            created_at: "2026-01-01T00:00:00.000Z".into(),
        })
        .expect("create");
    let manifest = if checkpointed {
        serde_json::json!({
            "run_id": id,
            "run_branch": format!("weft/run/{id}"),
            "meta_branch": format!("weft/meta/{id}"),
            "base_sha": BASE,
            "repo": "/repo",
        })
    } else {
        serde_json::json!({"run_id": id, "run_branch": null, "base_sha": null})
    };
    dir.write_json("manifest.json", &manifest)
        .expect("manifest");
    dir
}

fn stage_started(store: &mut Store, run: &str, node: &str) {
    store
        .stage_started(run, node, 1, "command")
        .expect("stage started");
}

fn stage_done(store: &mut Store, run: &str, node: &str) {
    store
        .commit_stage(&StageCommit {
            run_id: run,
            node_id: node,
            visit: 1,
            status: "succeeded",
            attempts: 1,
            duration_ms: 5,
            failure_reason: None,
            outcome: serde_json::json!({"status": "succeeded"}),
            events: Vec::new(),
            checkpoint: "{}".into(),
            files: None,
        })
        .expect("commit");
}

fn git(repo: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Weft Test",
            "-c",
            "user.email=test@weft.invalid",
        ])
        .args(["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A real patch from the git CLI: a modified text file, a new binary file,
/// a deleted file and a renamed one, as `git diff` writes them.
fn real_patch() -> Vec<u8> {
    let temp = tempfile::tempdir().expect("temp dir");
    let repo = temp.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(
        repo.join("main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .expect("write");
    std::fs::write(repo.join("old.txt"), "gone soon\n").expect("write");
    std::fs::write(
        repo.join("keep.md"),
        "# Title\n\nSome words that stay the same.\n",
    )
    .expect("write");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "base"]);
    std::fs::write(
        repo.join("main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n",
    )
    .expect("write");
    std::fs::write(repo.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0binary").expect("write");
    std::fs::remove_file(repo.join("old.txt")).expect("remove");
    std::fs::rename(repo.join("keep.md"), repo.join("docs.md")).expect("rename");
    git(repo, &["add", "-A"]);
    git(repo, &["diff", "--cached", "-M", "HEAD"])
}

#[test]
fn a_checkpointed_runs_view_carries_its_branch_base_and_final_commit() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let dir = run(&mut store, &home, "01GIT", true);
    run(&mut store, &home, "01PLAIN", false);
    let views = Views::open(&home).expect("views");

    let git = views
        .run("01GIT")
        .expect("view")
        .git
        .expect("a checkpointed run has git facts");
    assert_eq!(git.base_sha, BASE);
    assert_eq!(git.run_branch, "weft/run/01GIT");
    assert_eq!(git.meta_branch.as_deref(), Some("weft/meta/01GIT"));
    assert_eq!(git.repo.as_deref(), Some("/repo"));
    assert_eq!(git.final_git_commit_sha, None, "no conclusion.json yet");

    dir.write_json(
        "conclusion.json",
        &serde_json::json!({"status": "succeeded", "final_git_commit_sha": "f".repeat(40)}),
    )
    .expect("conclusion");
    let git = views.run("01GIT").expect("view").git.expect("git");
    assert_eq!(git.final_git_commit_sha, Some("f".repeat(40)));

    let plain = views.run("01PLAIN").expect("view");
    assert_eq!(plain.git, None, "null branch and base mean no checkpoints");
    let json = serde_json::to_value(&plain).expect("json");
    assert!(
        json.get("git").is_none(),
        "a plain run's view is serialised as before: {json}"
    );
}

#[test]
fn a_stage_patch_is_read_whole_with_its_binary_file_named() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let dir = run(&mut store, &home, "01GIT", true);
    stage_started(&mut store, "01GIT", "edit");
    let patch = real_patch();
    let text = String::from_utf8(patch.clone()).expect("the patch is text");
    assert!(
        text.contains("Binary files /dev/null and b/logo.png differ"),
        "{text}"
    );
    assert!(text.contains("rename from keep.md"), "{text}");
    let folder = dir.ensure_node_dir("edit", 1).expect("node dir");
    std::fs::write(folder.join("diff.patch"), &patch).expect("patch");
    std::fs::write(
        folder.join("status.json"),
        r#"{"status":"succeeded","git_commit_sha":null,"patch_complete":true}"#,
    )
    .expect("status");
    stage_done(&mut store, "01GIT", "edit");

    let changes = Views::open(&home)
        .expect("views")
        .stage_changes("01GIT", "edit", 1)
        .expect("changes");
    assert_eq!(changes.state, ChangesState::Recorded);
    assert_eq!(changes.patch, text, "the patch arrives byte for byte");
    assert_eq!(changes.size, patch.len() as u64);
    assert!(!changes.truncated);
    assert!(!changes.incomplete);
}

#[test]
fn a_stage_that_changed_nothing_is_told_from_one_that_has_not_finished() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let dir = run(&mut store, &home, "01GIT", true);
    stage_started(&mut store, "01GIT", "quiet");
    let folder = dir.ensure_node_dir("quiet", 1).expect("node dir");
    std::fs::write(folder.join("diff.patch"), "").expect("empty patch");
    stage_done(&mut store, "01GIT", "quiet");
    stage_started(&mut store, "01GIT", "busy");
    let views = Views::open(&home).expect("views");

    assert_eq!(
        views
            .stage_changes("01GIT", "quiet", 1)
            .expect("quiet")
            .state,
        ChangesState::Empty
    );
    assert_eq!(
        views.stage_changes("01GIT", "busy", 1).expect("busy").state,
        ChangesState::Pending
    );
    assert_eq!(
        views
            .stage_changes("01GIT", "never", 1)
            .expect("never")
            .state,
        ChangesState::Missing,
        "a stage that never ran has no patch and never will"
    );
}

#[test]
fn the_runs_final_patch_is_pending_until_the_run_ends() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let dir = run(&mut store, &home, "01GIT", true);
    store
        .set_status("01GIT", RunStatus::Running, None)
        .expect("running");
    let views = Views::open(&home).expect("views");
    assert_eq!(
        views.run_changes("01GIT").expect("changes").state,
        ChangesState::Pending
    );

    store
        .set_status("01GIT", RunStatus::Succeeded, None)
        .expect("done");
    assert_eq!(
        views.run_changes("01GIT").expect("changes").state,
        ChangesState::Missing,
        "an ended run without final.patch is missing it, not waiting for it"
    );

    let patch = real_patch();
    dir.write_file("final.patch", &patch).expect("final patch");
    let changes = views.run_changes("01GIT").expect("changes");
    assert_eq!(changes.state, ChangesState::Recorded);
    assert_eq!(changes.patch.as_bytes(), &patch[..]);
}

#[test]
fn a_run_without_checkpoints_has_no_patches_whatever_files_lie_around() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let dir = run(&mut store, &home, "01PLAIN", false);
    dir.write_file("final.patch", b"diff --git a/x b/x\n")
        .expect("stray file");
    let views = Views::open(&home).expect("views");
    assert_eq!(
        views.run_changes("01PLAIN").expect("run").state,
        ChangesState::NotCheckpointed
    );
    assert_eq!(
        views.stage_changes("01PLAIN", "a", 1).expect("stage").state,
        ChangesState::NotCheckpointed
    );
    assert_eq!(
        views.run_changes("01NOPE").expect_err("unknown run").code(),
        "run.not_found"
    );
}

#[test]
fn a_patch_over_the_cap_is_cut_at_a_line_end_and_marked() {
    let temp = tempfile::tempdir().expect("temp dir");
    let path = temp.path().join("diff.patch");
    let mut patch = String::from(
        "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1,1000 @@\n",
    );
    for i in 0..1000 {
        patch.push_str(&format!("+line {i} é\n"));
    }
    std::fs::write(&path, &patch).expect("write");
    let changes = read_patch(&path, 1000).expect("read");
    assert!(
        changes.truncated,
        "a 14 kB patch does not fit in 1000 bytes"
    );
    assert!(changes.patch.len() <= 1000);
    assert!(
        changes.patch.ends_with('\n'),
        "cut at a line's end: {:?}",
        &changes.patch[changes.patch.len() - 20..]
    );
    assert!(
        patch.starts_with(&changes.patch),
        "the start of the patch, unchanged"
    );
    assert_eq!(
        changes.size,
        patch.len() as u64,
        "the whole file's size is told"
    );

    let whole = read_patch(&path, PATCH_VIEW_MAX).expect("read");
    assert!(!whole.truncated);
    assert_eq!(whole.patch, patch);
}

#[test]
fn a_stage_patch_the_engine_cut_is_marked_incomplete() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let dir = run(&mut store, &home, "01GIT", true);
    stage_started(&mut store, "01GIT", "huge");
    let folder = dir.ensure_node_dir("huge", 1).expect("node dir");
    std::fs::write(
        folder.join("diff.patch"),
        "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n",
    )
    .expect("patch");
    std::fs::write(
        folder.join("status.json"),
        r#"{"status":"succeeded","patch_complete":false}"#,
    )
    .expect("status");
    stage_done(&mut store, "01GIT", "huge");
    let changes = Views::open(&home)
        .expect("views")
        .stage_changes("01GIT", "huge", 1)
        .expect("changes");
    assert_eq!(changes.state, ChangesState::Recorded);
    assert!(
        changes.incomplete,
        "status.json says the patch is only the start"
    );
}

#[test]
fn a_fifo_in_place_of_a_patch_is_not_waited_on() {
    let temp = tempfile::tempdir().expect("temp dir");
    let path = temp.path().join("final.patch");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &path,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
    )
    .expect("mkfifo");
    assert_eq!(
        read_patch(&path, PATCH_VIEW_MAX),
        None,
        "refused without blocking"
    );
    assert_eq!(
        read_patch(&temp.path().join("absent.patch"), PATCH_VIEW_MAX),
        None
    );
}
