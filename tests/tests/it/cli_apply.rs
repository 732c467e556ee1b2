//! `weft apply` end to end: real runs through weftd in a scratch git
//! repository, their result brought into the checkout by the real `weft`
//! binary, everything checked from outside with the `git` CLI.

use std::path::Path;

use weft_tests::{Sandbox, git};

/// A command stage that fixes a.txt and adds new.txt.
const FIX: &str = r#"digraph Fix {
    goal="fix a.txt"
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    fix [shape=parallelogram, script="printf 'a, fixed\n' > a.txt && printf 'new\n' > new.txt"]
    start -> fix -> exit
}
"#;

/// A command stage that adds notes.txt and fails afterwards.
const HALF: &str = r#"digraph Half {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    notes [shape=parallelogram, script="printf 'notes\n' > notes.txt"]
    boom  [shape=parallelogram, script="exit 3", on_failure="exit"]
    start -> notes -> boom -> exit
}
"#;

/// A checkout at `repo/` in the sandbox, on `main`, with a.txt committed.
fn repo(sb: &Sandbox) -> std::path::PathBuf {
    let root = sb.path().join("repo");
    std::fs::create_dir(&root).unwrap_or_else(|e| panic!("mkdir: {e}"));
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "user.name", "Ada"]);
    git(&root, &["config", "user.email", "ada@example.com"]);
    std::fs::write(root.join("a.txt"), "a\n").unwrap_or_else(|e| panic!("write: {e}"));
    commit_all(&root, "initial");
    root
}

fn commit_all(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", message]);
}

/// Runs `workflow` (a file in the sandbox) in the repository through weftd
/// and returns the run id.
fn run_in_repo(sb: &Sandbox, workflow: &str, extra: &[&str]) -> (String, i32) {
    let mut args = vec!["run", workflow, "--work-dir", "repo", "--json"];
    args.extend_from_slice(extra);
    let run = sb.run(&args);
    let conclusion: serde_json::Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("--json prints the conclusion ({e}): {run:?}"));
    let id = conclusion["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the conclusion names its run: {conclusion}"))
        .to_string();
    (id, run.code)
}

fn status(root: &Path) -> String {
    git(
        root,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
        ],
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn apply_last_fast_forwards_the_checked_out_branch_to_the_runs_work() {
    let sb = Sandbox::new();
    let root = repo(&sb);
    sb.write("fix.fabro", FIX);
    let (id, code) = run_in_repo(&sb, "fix.fabro", &[]);
    assert_eq!(code, 0, "the run succeeds");
    assert_eq!(
        read(&root.join("a.txt")),
        "a\n",
        "the run left the checkout alone"
    );

    let applied = sb.run(&["apply", "last"]);
    assert_eq!(applied.code, 0, "{applied:?}");
    assert!(
        applied.stdout.starts_with("fast-forwarded main from ")
            && applied.stdout.contains(&format!("(weft/run/{id})")),
        "{}",
        applied.stdout
    );
    let branch = format!("weft/run/{id}");
    assert_eq!(
        git(&root, &["rev-parse", "main"]),
        git(&root, &["rev-parse", &branch])
    );
    assert_eq!(read(&root.join("a.txt")), "a, fixed\n");
    assert_eq!(read(&root.join("new.txt")), "new\n");
    assert_eq!(status(&root), "", "working tree and index are the run's");

    let again = sb.run(&["apply", &id[..10], "--json"]);
    assert_eq!(again.code, 0, "{again:?}");
    let json = weft_tests::json(again.stdout.trim());
    assert_eq!(json["action"], "up_to_date", "{json}");
    assert_eq!(json["run_branch"], branch.as_str());
}

#[test]
fn a_conflicting_run_is_refused_leaving_the_checkout_as_it_was_and_patch_mode_applies_another() {
    let sb = Sandbox::new();
    let root = repo(&sb);
    sb.write("fix.fabro", FIX);
    let (_, code) = run_in_repo(&sb, "fix.fabro", &[]);
    assert_eq!(code, 0);
    std::fs::write(root.join("a.txt"), "the user's a\n").unwrap_or_else(|e| panic!("{e}"));
    commit_all(&root, "the user's own fix");
    let head = git(&root, &["rev-parse", "HEAD"]);

    let merge = sb.run(&["apply", "last"]);
    assert_eq!(merge.code, 1, "a refusal exits 1: {merge:?}");
    assert!(
        merge.stderr.contains("conflicts in a.txt") && merge.stderr.contains("nothing was changed"),
        "{}",
        merge.stderr
    );
    let patch = sb.run(&["apply", "last", "--patch"]);
    assert_eq!(patch.code, 1, "{patch:?}");
    assert!(patch.stderr.contains("does not apply"), "{}", patch.stderr);
    assert_eq!(git(&root, &["rev-parse", "HEAD"]), head);
    assert_eq!(status(&root), "", "nothing changed");
    assert_eq!(read(&root.join("a.txt")), "the user's a\n");

    // A run on top of the user's commit applies as a patch, uncommitted.
    sb.write("fix.fabro", FIX.replace("a.txt", "b.txt"));
    let (id, code) = run_in_repo(&sb, "fix.fabro", &[]);
    assert_eq!(code, 0);
    let patched = sb.run(&["apply", &id, "--patch"]);
    assert_eq!(patched.code, 0, "{patched:?}");
    assert!(
        patched.stdout.contains("final.patch") && patched.stdout.contains("2 files changed"),
        "{}",
        patched.stdout
    );
    assert_eq!(
        git(&root, &["rev-parse", "HEAD"]),
        head,
        "nothing committed"
    );
    assert_eq!(status(&root), "?? b.txt\n?? new.txt\n");
}

#[test]
fn a_failed_run_needs_force_and_an_unchecked_run_has_nothing_to_apply() {
    let sb = Sandbox::new();
    let root = repo(&sb);
    sb.write("half.fabro", HALF);
    let (failed, code) = run_in_repo(&sb, "half.fabro", &[]);
    assert_eq!(code, 1, "the run fails");
    let refused = sb.run(&["apply", &failed]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("failed") && refused.stderr.contains("--force"),
        "{}",
        refused.stderr
    );
    assert!(!root.join("notes.txt").exists());
    let forced = sb.run(&["apply", &failed, "--force"]);
    assert_eq!(forced.code, 0, "{forced:?}");
    assert_eq!(
        read(&root.join("notes.txt")),
        "notes\n",
        "the completed stage's work"
    );

    sb.write("fix.fabro", FIX);
    let (plain, code) = run_in_repo(&sb, "fix.fabro", &["--no-checkpoint"]);
    assert_eq!(code, 0);
    let nothing = sb.run(&["apply", &plain]);
    assert_eq!(nothing.code, 1, "{nothing:?}");
    assert!(
        nothing.stderr.contains("was not checkpointed"),
        "{}",
        nothing.stderr
    );
    let unknown = sb.run(&["apply", "ZZZZZZ"]);
    assert_eq!(unknown.code, 2, "an unknown run is a usage error");
}

#[test]
fn the_daemon_applies_a_run_for_the_app_and_refusals_carry_a_code_and_the_paths() {
    let sb = Sandbox::new();
    let root = repo(&sb);
    sb.write("fix.fabro", FIX);
    let (id, code) = run_in_repo(&sb, "fix.fabro", &[]);
    assert_eq!(code, 0);
    // `weft run` started weftd for this WEFT_HOME; the app talks to it.
    let mut client = weft_tests::RawClient::connect(&sb.path().join("home/run/weftd.sock"));

    std::fs::write(root.join("scratch.txt"), "mine\n").unwrap_or_else(|e| panic!("{e}"));
    let dirty = client.call(1, "run.apply", serde_json::json!({"run": id}));
    assert_eq!(dirty["error"]["data"]["code"], "apply.dirty", "{dirty}");
    assert_eq!(
        dirty["error"]["data"]["paths"],
        serde_json::json!(["scratch.txt"]),
        "{dirty}"
    );
    std::fs::remove_file(root.join("scratch.txt")).unwrap_or_else(|e| panic!("{e}"));

    let applied = client.call(2, "run.apply", serde_json::json!({"run": &id[..10]}));
    let result = &applied["result"];
    assert_eq!(result["action"], "fast_forwarded", "{applied}");
    assert_eq!(result["run_id"], id.as_str());
    assert_eq!(result["branch"], "main");
    assert_eq!(result["worktree_updated"], true);
    assert_eq!(read(&root.join("a.txt")), "a, fixed\n");
    assert_eq!(
        git(&root, &["rev-parse", "main"]).trim(),
        result["to"].as_str().unwrap_or_default()
    );
}
