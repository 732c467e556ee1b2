//! `weft::git::apply` — a run's result brought into the user's checkout —
//! on real repositories in temp dirs: built with git2, the run branch made
//! by `RunBranch`, everything checked from outside with the `git` CLI.

#![allow(clippy::expect_used)]

use std::path::Path;

use weft::git::{Applied, ApplyErrorKind, ApplyMode, ApplyRequest, RunBranch, apply};

use super::git::{checkout, git, repo_with, snapshot, write};

const MESSAGE: &str = "Merge weft run 01RUN (fix)";

/// A run of `repo` whose one stage wrote `files`: its branch
/// `weft/run/01RUN`, its worktree (in the returned temp dir) and its
/// final patch (the stage's, as it is the only one).
fn run_writing(repo: &Path, files: &[(&str, &str)]) -> (tempfile::TempDir, RunBranch, String) {
    let runs = tempfile::tempdir().expect("temp");
    let run =
        RunBranch::start(&checkout(repo), "weft/run/01RUN", &runs.path().join("w")).expect("start");
    for (name, text) in files {
        write(&run.worktree, name, text);
    }
    let stage = run
        .commit_stage("weft(01RUN): fix (succeeded)\n")
        .expect("commit");
    assert!(stage.sha.is_some(), "the stage changed something");
    (runs, run, stage.patch)
}

/// Commits everything in the checkout as the user would.
fn commit_all(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(
        root,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            message,
        ],
    );
}

fn merge_into<'a>(root: &'a Path, run: &'a RunBranch, to: Option<&'a str>) -> ApplyRequest<'a> {
    ApplyRequest {
        root,
        run_branch: &run.branch,
        base_sha: &run.base_sha,
        to,
        mode: ApplyMode::Merge { message: MESSAGE },
    }
}

fn patch<'a>(root: &'a Path, run: &'a RunBranch, patch: &'a str) -> ApplyRequest<'a> {
    ApplyRequest {
        root,
        run_branch: &run.branch,
        base_sha: &run.base_sha,
        to: None,
        mode: ApplyMode::Patch { patch },
    }
}

fn rev(root: &Path, what: &str) -> String {
    git(root, &["rev-parse", what]).trim().to_string()
}

fn read(root: &Path, name: &str) -> String {
    std::fs::read_to_string(root.join(name)).expect("read")
}

/// `git status` without refreshing the index (which would rewrite it).
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

#[test]
fn a_branch_that_has_not_moved_is_fast_forwarded_with_its_working_tree_and_index() {
    let repo = repo_with(&[("a.txt", "a\n"), ("gone.txt", "x\n")]);
    let root = repo.path();
    let (_runs, run, _) = run_writing(root, &[("a.txt", "a, fixed\n"), ("src/new.rs", "new\n")]);
    std::fs::remove_file(run.worktree.join("gone.txt")).expect("rm");
    let last = run.commit_stage("delete").expect("commit").head_sha;
    let before = rev(root, "main");

    let applied = apply(&merge_into(root, &run, None)).expect("apply");
    assert_eq!(
        applied,
        Applied::FastForwarded {
            branch: "main".into(),
            from: before,
            to: last.clone(),
            worktree_updated: true,
        }
    );
    assert_eq!(rev(root, "main"), last, "main is at the run's last commit");
    assert_eq!(rev(root, "HEAD"), last, "and still checked out");
    assert_eq!(read(root, "a.txt"), "a, fixed\n");
    assert_eq!(read(root, "src/new.rs"), "new\n");
    assert!(
        !root.join("gone.txt").exists(),
        "the run's deletion is made"
    );
    assert_eq!(
        status(root),
        "",
        "working tree and index match the new head"
    );

    assert_eq!(
        apply(&merge_into(root, &run, None)).expect("again"),
        Applied::UpToDate {
            branch: "main".into(),
            sha: last,
        },
        "applying again changes nothing"
    );
}

#[test]
fn a_branch_that_moved_gets_a_merge_commit_by_the_user_with_both_parents() {
    let repo = repo_with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let root = repo.path();
    git(root, &["config", "user.name", "Ada Lovelace"]);
    git(root, &["config", "user.email", "ada@example.com"]);
    let (_runs, run, _) = run_writing(root, &[("a.txt", "a, by the run\n")]);
    write(root, "b.txt", "b, by the user\n");
    commit_all(root, "user's work meanwhile");
    let ours = rev(root, "main");
    let theirs = rev(root, &run.branch);

    let Applied::Merged {
        branch,
        from,
        commit,
        worktree_updated,
    } = apply(&merge_into(root, &run, None)).expect("apply")
    else {
        panic!("a merge commit was expected");
    };
    assert_eq!(
        (branch.as_str(), from.as_str(), worktree_updated),
        ("main", ours.as_str(), true)
    );
    assert_eq!(rev(root, "main"), commit);
    assert_eq!(
        rev(root, "main^1"),
        ours,
        "the user's branch is the first parent"
    );
    assert_eq!(rev(root, "main^2"), theirs, "the run is the second");
    assert_eq!(
        git(root, &["log", "-1", "--format=%an <%ae>|%s", "main"]).trim(),
        format!("Ada Lovelace <ada@example.com>|{MESSAGE}"),
        "by the user's configured identity, with the given message"
    );
    assert_eq!(read(root, "a.txt"), "a, by the run\n");
    assert_eq!(read(root, "b.txt"), "b, by the user\n");
    assert_eq!(status(root), "", "working tree and index are the merge's");
}

#[test]
fn a_merge_with_conflicts_is_refused_naming_the_paths_and_changes_nothing() {
    let repo = repo_with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let root = repo.path();
    let (_runs, run, _) = run_writing(root, &[("a.txt", "the run's a\n"), ("b.txt", "run b\n")]);
    write(root, "a.txt", "the user's a\n");
    write(root, "b.txt", "user b\n");
    commit_all(root, "user's conflicting work");
    let before = snapshot(root);

    let error = apply(&merge_into(root, &run, None)).expect_err("conflicts");
    assert_eq!(
        error.kind,
        ApplyErrorKind::Conflicts {
            paths: vec!["a.txt".into(), "b.txt".into()]
        }
    );
    assert!(
        error.message.contains("conflicts in a.txt, b.txt")
            && error.message.contains("nothing was changed")
            && error.message.contains("git merge weft/run/01RUN"),
        "{error}"
    );
    assert_eq!(
        before,
        snapshot(root),
        "the checkout is byte-for-byte unchanged"
    );
}

#[test]
fn a_dirty_checkout_is_refused_untracked_files_included_but_ignored_ones_are_not() {
    let repo = repo_with(&[(".gitignore", "*.log\n"), ("a.txt", "a\n")]);
    let root = repo.path();
    let (_runs, run, final_patch) = run_writing(root, &[("a.txt", "a, fixed\n")]);
    write(root, "notes.txt", "mine\n");
    let before = snapshot(root);

    for request in [
        merge_into(root, &run, None),
        patch(root, &run, &final_patch),
    ] {
        let error = apply(&request).expect_err("dirty");
        assert_eq!(
            error.kind,
            ApplyErrorKind::Dirty {
                paths: vec!["notes.txt".into()]
            }
        );
        assert!(
            error.message.contains("uncommitted changes (notes.txt)")
                && error.message.contains("git stash -u"),
            "{error}"
        );
        assert_eq!(before, snapshot(root), "nothing changed");
    }

    std::fs::remove_file(root.join("notes.txt")).expect("rm");
    write(root, "debug.log", "ignored\n");
    apply(&merge_into(root, &run, None)).expect("an ignored file is not a change");
    assert_eq!(read(root, "debug.log"), "ignored\n");
}

#[test]
fn a_detached_head_is_refused_unless_a_branch_is_named() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let root = repo.path();
    let (_runs, run, _) = run_writing(root, &[("a.txt", "a, fixed\n")]);
    git(root, &["checkout", "-q", "--detach"]);
    let before = snapshot(root);

    let error = apply(&merge_into(root, &run, None)).expect_err("detached");
    assert_eq!(error.kind, ApplyErrorKind::Detached);
    assert!(
        error.message.contains("--to BRANCH") && error.message.contains("--patch"),
        "{error}"
    );
    assert_eq!(before, snapshot(root));

    let applied = apply(&merge_into(root, &run, Some("main"))).expect("--to main");
    assert!(
        matches!(
            applied,
            Applied::FastForwarded {
                worktree_updated: false,
                ..
            }
        ),
        "{applied:?}"
    );
    assert_eq!(rev(root, "main"), rev(root, &run.branch));
    assert_eq!(before, snapshot(root), "the detached checkout is untouched");
}

#[test]
fn merging_into_a_branch_not_checked_out_moves_only_that_branch_even_in_a_dirty_checkout() {
    let repo = repo_with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let root = repo.path();
    git(root, &["branch", "feature"]);
    let (_runs, run, _) = run_writing(root, &[("a.txt", "a, fixed\n")]);
    // The feature branch moved meanwhile: a merge commit, made without a
    // working tree.
    git(root, &["checkout", "-q", "feature"]);
    write(root, "b.txt", "b on feature\n");
    commit_all(root, "feature work");
    git(root, &["checkout", "-q", "main"]);
    write(root, "a.txt", "the user's unsaved edit\n");
    let before = snapshot(root);
    let feature = rev(root, "feature");

    let Applied::Merged {
        branch,
        worktree_updated,
        commit,
        ..
    } = apply(&merge_into(root, &run, Some("feature"))).expect("apply")
    else {
        panic!("a merge commit was expected");
    };
    assert_eq!((branch.as_str(), worktree_updated), ("feature", false));
    assert_eq!(rev(root, "feature"), commit);
    assert_eq!(rev(root, "feature^1"), feature);
    assert_eq!(git(root, &["show", "feature:a.txt"]), "a, fixed\n");
    assert_eq!(git(root, &["show", "feature:b.txt"]), "b on feature\n");
    assert_eq!(
        before,
        snapshot(root),
        "HEAD, index and working tree (its uncommitted edit included) are untouched"
    );
}

#[test]
fn weft_branches_missing_branches_and_branches_checked_out_elsewhere_are_refused() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let root = repo.path();
    let (_runs, run, _) = run_writing(root, &[("a.txt", "a, fixed\n")]);
    git(root, &["branch", "weft/run/OTHER"]);
    git(root, &["branch", "elsewhere"]);
    let other = tempfile::tempdir().expect("temp");
    let other_worktree = other.path().join("wt");
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            &other_worktree.to_string_lossy(),
            "elsewhere",
        ],
    );
    let before = snapshot(root);

    for target in ["weft/run/01RUN", "weft/run/OTHER", "weft/meta/01RUN"] {
        let error = apply(&merge_into(root, &run, Some(target))).expect_err(target);
        assert_eq!(error.kind, ApplyErrorKind::WeftBranch, "{target}");
        assert!(error.message.contains("is a Weft branch"), "{error}");
    }
    let error = apply(&merge_into(root, &run, Some("nope"))).expect_err("missing");
    assert_eq!(error.kind, ApplyErrorKind::NoSuchBranch);
    assert!(
        error.message.contains("git branch nope weft/run/01RUN"),
        "{error}"
    );
    let error = apply(&merge_into(root, &run, Some("elsewhere"))).expect_err("elsewhere");
    assert_eq!(error.kind, ApplyErrorKind::CheckedOutElsewhere);
    assert!(error.message.contains("wt"), "{error}");
    let error = apply(&merge_into(&other_worktree, &run, Some("main"))).expect_err("main");
    assert_eq!(
        error.kind,
        ApplyErrorKind::CheckedOutElsewhere,
        "from a linked worktree, the main one's branch is refused"
    );

    let gone = RunBranch {
        branch: "weft/run/GONE".into(),
        ..run.clone()
    };
    let error = apply(&merge_into(root, &gone, None)).expect_err("no run branch");
    assert_eq!(error.kind, ApplyErrorKind::NoRunBranch);
    assert!(
        error.message.contains("weft/run/GONE") && error.message.contains("--patch"),
        "{error}"
    );
    assert_eq!(before, snapshot(root), "nothing changed");
    assert_eq!(rev(root, "elsewhere"), run.base_sha);
}

#[test]
fn patch_mode_changes_the_working_tree_only_and_commits_nothing() {
    let repo = repo_with(&[("a.txt", "a\n"), ("gone.txt", "x\n")]);
    let root = repo.path();
    let (_runs, run, _) = run_writing(root, &[("a.txt", "a, fixed\n"), ("src/new.rs", "new\n")]);
    std::fs::remove_file(run.worktree.join("gone.txt")).expect("rm");
    run.commit_stage("delete").expect("commit");
    // final.patch as the engine writes it: base → the run's last commit.
    let final_patch = git(root, &["diff", &run.base_sha, &run.branch]);
    let head = rev(root, "HEAD");
    let index = std::fs::read(root.join(".git/index")).expect("index");

    let applied = apply(&patch(root, &run, &final_patch)).expect("apply");
    assert_eq!(
        applied,
        Applied::Patched {
            files: vec!["a.txt".into(), "gone.txt".into(), "src/new.rs".into()]
        }
    );
    assert_eq!(read(root, "a.txt"), "a, fixed\n");
    assert_eq!(read(root, "src/new.rs"), "new\n");
    assert!(!root.join("gone.txt").exists());
    assert_eq!(rev(root, "HEAD"), head, "nothing committed");
    assert_eq!(
        std::fs::read(root.join(".git/index")).expect("index"),
        index,
        "nothing staged"
    );
    assert_eq!(status(root), " M a.txt\n D gone.txt\n?? src/new.rs\n");

    git(root, &["checkout", "-q", "--", "."]);
    std::fs::remove_dir_all(root.join("src")).expect("rm");
    git(root, &["checkout", "-q", "--detach"]);
    assert!(
        matches!(
            apply(&patch(root, &run, &final_patch)),
            Ok(Applied::Patched { .. })
        ),
        "a detached HEAD takes a patch"
    );
    git(root, &["checkout", "-q", "--", "."]);
    std::fs::remove_dir_all(root.join("src")).expect("rm");
    let quiet_runs = tempfile::tempdir().expect("temp");
    let quiet = RunBranch::start(
        &checkout(root),
        "weft/run/QUIET",
        &quiet_runs.path().join("w"),
    )
    .expect("start");
    assert_eq!(
        apply(&patch(root, &quiet, "")).expect("empty"),
        Applied::Patched { files: vec![] },
        "a run that changed nothing has nothing to apply"
    );
    assert_eq!(status(root), "");
}

#[test]
fn a_patch_that_does_not_apply_is_refused_and_changes_nothing() {
    let repo = repo_with(&[("a.txt", "one\ntwo\nthree\n"), ("b.txt", "b\n")]);
    let root = repo.path();
    let (_runs, run, final_patch) = run_writing(
        root,
        &[("b.txt", "b, fixed\n"), ("a.txt", "one\nTWO\nthree\n")],
    );
    write(root, "a.txt", "something else entirely\n");
    commit_all(root, "user rewrote a.txt");
    let before = snapshot(root);

    let error = apply(&patch(root, &run, &final_patch)).expect_err("does not apply");
    assert_eq!(error.kind, ApplyErrorKind::PatchDoesNotApply);
    assert!(
        error.message.contains("does not apply")
            && error.message.contains("nothing was changed")
            && error.message.contains(&run.base_sha[..12]),
        "{error}"
    );
    assert_eq!(
        before,
        snapshot(root),
        "b.txt, which would apply, was not changed either"
    );

    let error =
        apply(&patch(root, &run, "not a patch at all\n@@ nonsense\n")).expect_err("not a patch");
    assert_eq!(error.kind, ApplyErrorKind::PatchDoesNotApply);
    assert_eq!(before, snapshot(root));
}

#[test]
fn a_patch_with_binary_changes_is_refused_naming_them() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let root = repo.path();
    let runs = tempfile::tempdir().expect("temp");
    let run =
        RunBranch::start(&checkout(root), "weft/run/01RUN", &runs.path().join("w")).expect("start");
    std::fs::write(run.worktree.join("logo.png"), [0u8, 159, 146, 150, 0, 1]).expect("write");
    write(&run.worktree, "a.txt", "a, fixed\n");
    let stage = run.commit_stage("binary").expect("commit");
    assert!(stage.patch.contains("Binary files"), "{}", stage.patch);
    let before = snapshot(root);

    let error = apply(&patch(root, &run, &stage.patch)).expect_err("binary");
    assert_eq!(error.kind, ApplyErrorKind::PatchDoesNotApply);
    assert!(
        error.message.contains("binary files (logo.png)")
            && error.message.contains("without --patch"),
        "{error}"
    );
    assert_eq!(before, snapshot(root));
    assert!(matches!(
        apply(&merge_into(root, &run, None)),
        Ok(Applied::FastForwarded { .. })
    ));
    assert_eq!(
        std::fs::read(root.join("logo.png")).expect("read"),
        [0u8, 159, 146, 150, 0, 1],
        "merging carries the binary file"
    );
}

#[test]
fn a_patch_reaching_outside_the_checkout_is_refused() {
    let inner = repo_with(&[("a.txt", "a\n")]);
    let (_runs, run, _) = run_writing(inner.path(), &[("a.txt", "b\n")]);
    let hostile = "diff --git a/../escaped.txt b/../escaped.txt\nnew file mode 100644\n\
                   --- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+gotcha\n";
    let before = snapshot(inner.path());
    // The run branch is gone, so the patch is all there is to go by.
    let gone = RunBranch {
        branch: "weft/run/GONE".into(),
        ..run.clone()
    };
    let error = apply(&patch(inner.path(), &gone, hostile)).expect_err("outside");
    assert_eq!(error.kind, ApplyErrorKind::PatchDoesNotApply, "{error}");
    assert!(error.message.contains("invalid path"), "{error}");
    assert!(
        !inner
            .path()
            .parent()
            .expect("parent")
            .join("escaped.txt")
            .exists(),
        "nothing was written outside the checkout"
    );
    assert_eq!(before, snapshot(inner.path()));
}

#[test]
fn an_operation_under_way_is_refused() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let root = repo.path();
    let (_runs, run, _) = run_writing(root, &[("a.txt", "b\n")]);
    std::fs::write(root.join(".git/MERGE_HEAD"), format!("{}\n", run.base_sha)).expect("write");
    let error = apply(&merge_into(root, &run, None)).expect_err("merging");
    assert_eq!(error.kind, ApplyErrorKind::OperationInProgress);
    assert!(error.message.contains("a merge is under way"), "{error}");
}

#[test]
fn a_patch_missing_files_the_run_branch_changed_is_refused_as_cut() {
    let repo = repo_with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let root = repo.path();
    let (_runs, run, final_patch) = run_writing(root, &[("a.txt", "a2\n"), ("b.txt", "b2\n")]);
    // Cut between the two files, as a 32 MiB limit may: a patch that
    // parses and would apply, but is half the run's work.
    let second = final_patch
        .find("diff --git a/b.txt")
        .expect("b.txt's part");
    let before = snapshot(root);
    for cut in [&final_patch[..second], ""] {
        let error = apply(&patch(root, &run, cut)).expect_err("cut");
        assert_eq!(error.kind, ApplyErrorKind::PatchDoesNotApply);
        assert!(
            error.message.contains("lacks changes") && error.message.contains("b.txt"),
            "{error}"
        );
        assert_eq!(before, snapshot(root), "nothing changed");
    }
    assert!(matches!(
        apply(&patch(root, &run, &final_patch)),
        Ok(Applied::Patched { .. })
    ));
}
