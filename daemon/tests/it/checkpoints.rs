//! Git checkpoint mode in the engine (docs/git.md): runs of the engine
//! fixtures `git_*.fabro` in real repositories made in temp dirs, checked
//! from outside with the `git` CLI.

#![allow(clippy::expect_used)]

use std::path::Path;

use serde_json::Value;
use weft::model::{EventKind, RunStatus};

use super::git::{git, repo_with, snapshot, write};
use super::harness::{Options, Run, fixture, run_in};

/// Runs the engine fixture `name` with a repository as its work dir.
async fn run_in_repo(name: &str, repo: tempfile::TempDir, options: Options) -> Run {
    let home = tempfile::tempdir().expect("home");
    run_in(fixture(name), options, home, repo).await
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn notices(run: &Run) -> Vec<String> {
    run.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::RunNotice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn branch(run: &Run) -> String {
    format!("weft/run/{}", run.conclusion.run_id)
}

/// The subjects of the run branch's commits after `base`, oldest first.
fn subjects(repo: &Path, base: &str, branch: &str) -> Vec<String> {
    git(
        repo,
        &[
            "log",
            "--reverse",
            "--format=%s",
            &format!("{base}..{branch}"),
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

#[tokio::test]
async fn each_stage_that_changes_files_is_a_commit_on_the_run_branch_and_the_checkout_is_untouched()
{
    let repo = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    // Uncommitted changes stay in the checkout and out of the run.
    write(repo.path(), "kept.txt", "edited by the user\n");
    write(repo.path(), "scratch.txt", "the user's\n");
    let root = repo.path().to_path_buf();
    let base = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let before = snapshot(&root);

    let run = run_in_repo("git_stages.fabro", repo, Options::default()).await;

    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert_eq!(snapshot(&root), before, "the user's checkout changed");
    let id = &run.conclusion.run_id;
    let branch = branch(&run);
    assert_eq!(
        subjects(&root, &base, &branch),
        [
            format!("weft({id}): write (succeeded)"),
            format!("weft({id}): edit (succeeded)"),
        ],
        "one commit per stage that changed something"
    );
    // The trailers, and the metadata commit the last one links to.
    let message = git(&root, &["log", "-1", "--format=%B", &branch]);
    assert!(message.contains(&format!("Weft-Run: {id}\n")), "{message}");
    assert!(message.contains("Weft-Completed: 4\n"), "{message}");
    let meta = message
        .lines()
        .find_map(|l| l.strip_prefix("Weft-Checkpoint: "))
        .expect("a Weft-Checkpoint trailer")
        .to_string();
    let meta_branch = format!("weft/meta/{id}");
    assert!(
        git(&root, &["rev-list", &meta_branch])
            .lines()
            .any(|c| c == meta),
        "the trailer names a commit of {meta_branch}"
    );
    let meta_checkpoint: Value =
        serde_json::from_str(&git(&root, &["show", &format!("{meta}:checkpoint.json")]))
            .expect("checkpoint json");
    assert_eq!(meta_checkpoint["current_node"], "edit");
    let outcome: Value = serde_json::from_str(&git(
        &root,
        &["show", &format!("{meta}:stages/0004-edit@1/outcome.json")],
    ))
    .expect("outcome json");
    assert_eq!(outcome["status"], "succeeded");
    assert!(git(&root, &["show", &format!("{meta_branch}:graph.fabro")]).contains("GitStages"));
    // What the branch holds.
    assert_eq!(
        git(&root, &["show", &format!("{branch}:src/new.txt")]),
        "hello\n"
    );
    assert_eq!(
        git(&root, &["show", &format!("{branch}:kept.txt")]),
        "kept\nmore\n",
        "the run started from the committed file, not the user's edit"
    );
    let names = git(&root, &["ls-tree", "--name-only", "-r", &branch]);
    assert!(
        !names.contains("gone.txt") && !names.contains("scratch.txt"),
        "{names}"
    );

    // Per stage: diff.patch (empty when nothing changed), status.json,
    // files_touched for the command stages.
    let head = git(&root, &["rev-parse", &branch]).trim().to_string();
    assert!(run.stage_file("write", "diff.patch").contains("+hello"));
    assert_eq!(run.stage_file("nothing", "diff.patch"), "");
    let edit_patch = run.stage_file("edit", "diff.patch");
    assert!(
        edit_patch.contains("+more") && edit_patch.contains("deleted file"),
        "{edit_patch}"
    );
    let status = json(&run.conclusion.run_dir.join("nodes/edit/status.json"));
    assert_eq!(status["git_commit_sha"], head.as_str());
    assert_eq!(status["patch_complete"], true);
    assert_eq!(
        json(&run.conclusion.run_dir.join("nodes/nothing/status.json"))["git_commit_sha"],
        Value::Null
    );
    assert_eq!(run.outcome("write").files_touched, ["src/new.txt"]);
    assert_eq!(run.outcome("edit").files_touched, ["gone.txt", "kept.txt"]);
    assert!(run.outcome("nothing").files_touched.is_empty());

    // The checkpoint, the conclusion and the manifest name the commits.
    assert_eq!(run.checkpoint()["git_commit_sha"], head.as_str());
    let conclusion = json(&run.conclusion.run_dir.join("conclusion.json"));
    assert_eq!(conclusion["final_git_commit_sha"], head.as_str());
    let manifest = json(&run.conclusion.run_dir.join("manifest.json"));
    assert_eq!(manifest["run_branch"], branch.as_str());
    assert_eq!(manifest["base_sha"], base.as_str());
    // final.patch is the whole run's change: it turns the base into the head.
    let final_patch =
        std::fs::read_to_string(run.conclusion.run_dir.join("final.patch")).expect("final.patch");
    assert_eq!(
        final_patch,
        git(&root, &["diff", "--no-color", &base, &head]),
        "final.patch is base..head"
    );
    // A run that succeeded leaves no worktree behind; its branch stays.
    assert!(!run.conclusion.run_dir.join("worktree").exists());
    assert!(!git(&root, &["worktree", "list"]).contains(id.as_str()));

    let said = notices(&run);
    assert!(
        said.iter()
            .any(|n| n.contains("has uncommitted changes") && n.contains("--include-dirty")),
        "{said:?}"
    );
    assert!(said.iter().any(|n| n.contains(&branch)), "{said:?}");
}

#[tokio::test]
async fn include_dirty_starts_the_worktree_with_the_checkouts_uncommitted_changes() {
    let repo = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    write(repo.path(), "kept.txt", "edited by the user\n");
    write(repo.path(), "notes/scratch.txt", "the user's\n");
    let root = repo.path().to_path_buf();
    let base = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let before = snapshot(&root);

    let run = run_in_repo(
        "git_stages.fabro",
        repo,
        Options {
            include_dirty: true,
            ..Options::default()
        },
    )
    .await;

    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert_eq!(snapshot(&root), before, "the user's checkout changed");
    let branch = branch(&run);
    let id = &run.conclusion.run_id;
    assert_eq!(
        subjects(&root, &base, &branch)[0],
        format!("weft({id}): the checkout's uncommitted changes")
    );
    assert_eq!(
        git(&root, &["show", &format!("{branch}:kept.txt")]),
        "edited by the user\nmore\n"
    );
    assert_eq!(
        git(&root, &["show", &format!("{branch}:notes/scratch.txt")]),
        "the user's\n"
    );
    // The stage's own diff has only what the stage did.
    let edit_patch = run.stage_file("edit", "diff.patch");
    assert!(!edit_patch.contains("+edited by the user"), "{edit_patch}");
    assert!(
        edit_patch.contains(" edited by the user\n+more"),
        "{edit_patch}"
    );
}

#[tokio::test]
async fn no_checkpoint_runs_in_the_checkout_itself() {
    let repo = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    let root = repo.path().to_path_buf();
    let run = run_in_repo(
        "git_stages.fabro",
        repo,
        Options {
            no_checkpoint: true,
            ..Options::default()
        },
    )
    .await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert_eq!(
        std::fs::read_to_string(root.join("src/new.txt")).expect("new"),
        "hello\n"
    );
    assert!(git(&root, &["branch", "--list", "weft/*"]).is_empty());
    assert_eq!(run.stage_file("write", "diff.patch"), "");
    let manifest = json(&run.conclusion.run_dir.join("manifest.json"));
    assert_eq!(manifest["run_branch"], Value::Null);
}

#[tokio::test]
async fn a_work_dir_in_no_repository_runs_there_without_checkpoints() {
    let work = tempfile::tempdir().expect("work");
    write(work.path(), "kept.txt", "kept\n");
    write(work.path(), "gone.txt", "gone\n");
    let dir = work.path().to_path_buf();
    let run = run_in_repo("git_stages.fabro", work, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert!(dir.join("src/new.txt").exists());
    assert!(!run.conclusion.run_dir.join("worktree").exists());
    assert!(!run.conclusion.run_dir.join("final.patch").exists());
    assert_eq!(run.checkpoint().get("git_commit_sha"), None);
}

#[tokio::test]
async fn a_run_that_fails_keeps_its_worktree_for_inspection() {
    let repo = repo_with(&[("kept.txt", "kept\n")]);
    let root = repo.path().to_path_buf();
    let run = run_in_repo("git_fails.fabro", repo, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Failed);
    let worktree = run.conclusion.run_dir.join("worktree");
    assert_eq!(
        std::fs::read_to_string(worktree.join("broken.txt")).expect("kept worktree"),
        "broken\n"
    );
    let branch = branch(&run);
    // The failed stage is committed too: its changes are part of the record.
    let id = &run.conclusion.run_id;
    let base = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        subjects(&root, &base, &branch),
        [
            format!("weft({id}): write (succeeded)"),
            format!("weft({id}): fail (failed)"),
        ]
    );
    assert!(
        std::fs::read_to_string(run.conclusion.run_dir.join("final.patch"))
            .expect("final.patch")
            .contains("+broken")
    );
}

#[tokio::test]
async fn parallel_branches_share_one_worktree_and_the_join_sees_both() {
    let repo = repo_with(&[("shared.txt", "top\n")]);
    let root = repo.path().to_path_buf();
    let run = run_in_repo("git_parallel.fabro", repo, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    let branch = branch(&run);
    // Different files: both are on the branch, and a later stage read both.
    assert_eq!(
        git(&root, &["show", &format!("{branch}:both.txt")]),
        "from-a\nfrom-b\n"
    );
    // The same file: both appends landed (in whichever order the branches
    // ran); nothing was lost to a reset or a race between commits.
    let shared = git(&root, &["show", &format!("{branch}:shared.txt")]);
    let mut lines: Vec<&str> = shared.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["line-a", "line-b", "top"], "{shared}");
    // Every commit on the branch is a stage's, and none is empty.
    let base = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    for sha in git(&root, &["rev-list", &format!("{base}..{branch}")]).lines() {
        let changed = git(&root, &["show", "--format=", "--name-only", sha]);
        assert!(!changed.trim().is_empty(), "commit {sha} is empty");
    }
}

#[tokio::test]
async fn a_child_run_works_in_its_parents_worktree_and_the_parent_stage_commits_its_changes() {
    let repo = repo_with(&[("kept.txt", "kept\n")]);
    let root = repo.path().to_path_buf();
    let before = snapshot(&root);
    let run = run_in_repo("git_subworkflow.fabro", repo, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert_eq!(snapshot(&root), before);
    let branch = branch(&run);
    assert_eq!(
        git(&root, &["show", &format!("{branch}:child.txt")]),
        "child sees from-parent\n"
    );
    // Only the parent's run has branches.
    let branches = git(&root, &["branch", "--list", "weft/run/*"]);
    assert_eq!(branches.lines().count(), 1, "{branches}");
    assert_eq!(run.outcome("child").files_touched, ["child.txt"]);
}

#[tokio::test]
async fn two_runs_on_one_repository_each_get_their_own_branch_and_worktree() {
    let repo = repo_with(&[("kept.txt", "kept\n")]);
    let root = repo.path().to_path_buf();
    let before = snapshot(&root);
    let home_a = tempfile::tempdir().expect("home");
    let home_b = tempfile::tempdir().expect("home");
    // Each run's work dir is a folder of the checkout (removed when its run
    // is dropped): it works in the same folder of its own worktree.
    let folder = || tempfile::TempDir::new_in(&root).expect("temp");
    let (a, b) = tokio::join!(
        run_in(
            fixture("git_subworkflow.fabro"),
            Options::default(),
            home_a,
            folder()
        ),
        run_in(
            fixture("git_subworkflow.fabro"),
            Options::default(),
            home_b,
            folder()
        ),
    );
    assert_eq!(a.status(), RunStatus::Succeeded, "{}", a.reason());
    assert_eq!(b.status(), RunStatus::Succeeded, "{}", b.reason());
    for run in [&a, &b] {
        let folder = run.work.path().file_name().expect("name").to_string_lossy();
        let names = git(&root, &["ls-tree", "-r", "--name-only", &branch(run)]);
        assert!(names.contains(&format!("{folder}/parent.txt")), "{names}");
    }
    assert_ne!(branch(&a), branch(&b));
    drop((a, b));
    assert_eq!(snapshot(&root), before, "the user's checkout changed");
    let branches = git(&root, &["branch", "--list", "weft/run/*"]);
    assert_eq!(branches.lines().count(), 2, "{branches}");
}

#[tokio::test]
async fn a_detached_head_is_the_base_of_the_runs_branch() {
    let repo = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    let root = repo.path().to_path_buf();
    let head = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    git(&root, &["checkout", "--quiet", "--detach"]);
    let run = run_in_repo("git_stages.fabro", repo, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    let first = git(
        &root,
        &["rev-list", "--max-parents=0", "--reverse", &branch(&run)],
    );
    assert_eq!(first.lines().next(), Some(head.as_str()));
    assert_eq!(
        git(&root, &["rev-parse", "HEAD"]).trim(),
        head,
        "HEAD stays detached there"
    );
}

#[tokio::test]
async fn a_shallow_clone_is_checkpointed_with_a_notice() {
    let origin = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    write(origin.path(), "more.txt", "a second commit\n");
    git(origin.path(), &["add", "more.txt"]);
    git(
        origin.path(),
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "second",
        ],
    );
    let clone = tempfile::tempdir().expect("clone");
    let url = format!("file://{}", origin.path().display());
    git(
        clone.path(),
        &["clone", "--quiet", "--depth", "1", &url, "."],
    );
    let root = clone.path().to_path_buf();
    let run = run_in_repo("git_stages.fabro", clone, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert!(
        notices(&run).iter().any(|n| n.contains("shallow clone")),
        "{:?}",
        notices(&run)
    );
    assert_eq!(
        git(&root, &["show", &format!("{}:src/new.txt", branch(&run))]),
        "hello\n"
    );
}

#[tokio::test]
async fn submodules_are_not_checked_out_in_the_worktree_and_the_run_says_so() {
    let sub = repo_with(&[("lib.txt", "lib\n")]);
    let repo = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    let root = repo.path().to_path_buf();
    git(
        &root,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "--quiet",
            &sub.path().display().to_string(),
            "vendor/lib",
        ],
    );
    git(
        &root,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "submodule",
        ],
    );
    let before = snapshot(&root);
    let run = run_in_repo("git_stages.fabro", repo, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert!(
        notices(&run).iter().any(|n| n.contains("submodules")),
        "{:?}",
        notices(&run)
    );
    assert_eq!(snapshot(&root), before);
    // The gitlink is kept as it was: the run did not drop the submodule.
    let tree = git(&root, &["ls-tree", "-r", &branch(&run)]);
    assert!(
        tree.contains("160000 commit") && tree.contains("vendor/lib"),
        "{tree}"
    );
}

#[tokio::test]
async fn a_repository_on_another_filesystem_than_the_run_directory_works() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return; // no second filesystem on this machine to try
    }
    let repo = tempfile::tempdir_in(shm).expect("repo on tmpfs");
    let built = repo_with(&[("kept.txt", "kept\n"), ("gone.txt", "gone\n")]);
    // Move the repository to the other filesystem by copying its files.
    copy_tree(built.path(), repo.path());
    let root = repo.path().to_path_buf();
    let run = run_in_repo("git_stages.fabro", repo, Options::default()).await;
    assert_eq!(run.status(), RunStatus::Succeeded, "{}", run.reason());
    assert_eq!(
        git(&root, &["show", &format!("{}:src/new.txt", branch(&run))]),
        "hello\n"
    );
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[tokio::test]
async fn a_worktree_git_cannot_create_fails_the_run_at_its_start_and_leaves_no_branch() {
    // A file name long enough that, under the run directory's worktree, its
    // path is longer than the system allows.
    let long = "n".repeat(250);
    let deep: String = (0..15).map(|_| format!("{long}/")).collect();
    let repo = repo_with(&[(&format!("{deep}file.txt"), "deep\n")]);
    let root = repo.path().to_path_buf();
    let before = snapshot(&root);
    let home = tempfile::tempdir().expect("home");
    // The home itself is deep, so the worktree's paths pass the limit.
    let deep_home = home.path().join("h".repeat(200)).join("i".repeat(200));
    std::fs::create_dir_all(&deep_home).expect("deep home");
    let weft_home = weft::store::Home::at(&deep_home);
    let services = weft::engine::Services {
        caller_env: None,
        home: weft_home.clone(),
        store: std::sync::Arc::new(std::sync::Mutex::new(
            weft::store::Store::open(&weft_home).expect("store"),
        )),
        interviewer: std::sync::Arc::new(weft::engine::interviewer::AutoApprove),
        clock: weft::engine::clock::Clock::fake(),
        cancel: weft::exec::cancel::Cancel::new(),
        observer: None,
        nesting: 0,
        agents: weft::engine::steering::RunningAgents::default(),
        budget: None,
        sandbox: None,
    };
    let path = fixture("git_stages.fabro");
    let request = weft::engine::RunRequest {
        source: std::fs::read_to_string(&path).expect("workflow"),
        workflow_path: Some(path),
        work_dir: root.clone(),
        ..weft::engine::RunRequest::default()
    };
    let error = match weft::engine::start(request, &services).await {
        Ok(done) => panic!("the run started: {done:?}"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains("cannot set up the run's git worktree") && error.contains("--no-checkpoint"),
        "{error}"
    );
    assert!(git(&root, &["branch", "--list", "weft/*"]).is_empty());
    assert_eq!(snapshot(&root), before);
}
