//! Git checkpoints' repository work (`weft::git`) on real repositories in
//! temp dirs: built with git2, checked from outside with the `git` CLI.

#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use weft::git::{Checkout, Discovery, MetadataBranch, RunBranch, stage_message};

/// A repository with `files` committed on `main`.
pub(crate) fn repo_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp");
    let repo = git2::Repository::init_opts(
        dir.path(),
        git2::RepositoryInitOptions::new().initial_head("main"),
    )
    .expect("init");
    for (name, text) in files {
        write(dir.path(), name, text);
    }
    let mut index = repo.index().expect("index");
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.write().expect("write index");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let me = git2::Signature::now("Test", "test@example.com").expect("signature");
    repo.commit(Some("HEAD"), &me, &me, "initial", &tree, &[])
        .expect("commit");
    dir
}

pub(crate) fn write(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// `git ARGS` in `dir`, its stdout; panics when git fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn checkout(dir: &Path) -> Checkout {
    match Checkout::discover(dir).expect("discover") {
        Discovery::Checkout(c) => c,
        Discovery::NotARepository => panic!("{} is a repository", dir.display()),
    }
}

/// Everything about the user's checkout a run must not change.
#[derive(Debug, PartialEq)]
pub(crate) struct Snapshot {
    head: String,
    index: Vec<u8>,
    status: String,
    stash: String,
    files: Vec<(PathBuf, Vec<u8>)>,
}

pub(crate) fn snapshot(root: &Path) -> Snapshot {
    let mut files: Vec<(PathBuf, Vec<u8>)> = walk(root)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).expect("read");
            (path, bytes)
        })
        .collect();
    files.sort();
    Snapshot {
        head: git(root, &["rev-parse", "HEAD"]),
        index: std::fs::read(root.join(".git/index")).expect("index"),
        // Without optional locks: `git status` may otherwise refresh (and
        // so rewrite) the index it is looking at.
        status: git(
            root,
            &[
                "--no-optional-locks",
                "status",
                "--porcelain=v1",
                "--untracked-files=all",
            ],
        ),
        stash: git(root, &["stash", "list"]),
        files,
    }
}

/// The files under `dir`, .git left out.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_work_dir_outside_any_repository_has_checkpoints_off() {
    let dir = tempfile::tempdir().expect("temp");
    assert_eq!(
        Checkout::discover(dir.path()).expect("discover"),
        Discovery::NotARepository
    );
}

#[test]
fn a_bare_repository_and_one_without_commits_are_refused_with_the_reason() {
    let bare = tempfile::tempdir().expect("temp");
    git2::Repository::init_bare(bare.path()).expect("init");
    let error = Checkout::discover(bare.path()).expect_err("bare");
    assert!(error.0.contains("bare repository"), "{error}");

    let empty = tempfile::tempdir().expect("temp");
    git2::Repository::init(empty.path()).expect("init");
    let error = Checkout::discover(empty.path()).expect_err("no commits");
    assert!(
        error.0.contains("no commits yet") && error.0.contains("--no-checkpoint"),
        "{error}"
    );
}

#[test]
fn discovery_from_a_subdirectory_finds_the_top_the_base_and_whether_it_is_dirty() {
    let repo = repo_with(&[("src/a.rs", "fn a() {}\n")]);
    let found = checkout(&repo.path().join("src"));
    assert_eq!(
        found.root.canonicalize().expect("canonical"),
        repo.path().canonicalize().expect("canonical")
    );
    assert_eq!(
        found.head_sha,
        git(repo.path(), &["rev-parse", "HEAD"]).trim()
    );
    assert_eq!(found.branch.as_deref(), Some("main"));
    assert!(!found.dirty && !found.shallow);

    write(repo.path(), "new.txt", "untracked\n");
    assert!(
        checkout(repo.path()).dirty,
        "an untracked file makes it dirty"
    );
    write(repo.path(), ".gitignore", "new.txt\n");
    git(repo.path(), &["add", ".gitignore"]);
    git(
        repo.path(),
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "ignore",
        ],
    );
    assert!(!checkout(repo.path()).dirty, "an ignored file does not");

    git(repo.path(), &["checkout", "-q", "--detach"]);
    assert_eq!(checkout(repo.path()).branch, None, "a detached HEAD");
}

#[test]
fn a_run_branch_starts_at_head_in_its_own_worktree_and_leaves_the_checkout_untouched() {
    let repo = repo_with(&[("a.txt", "one\n"), ("b.txt", "two\n")]);
    // Uncommitted work of the user's: a change, a staged file, an untracked one.
    write(repo.path(), "a.txt", "one, edited\n");
    write(repo.path(), "staged.txt", "staged\n");
    git(repo.path(), &["add", "staged.txt"]);
    write(repo.path(), "scratch.txt", "mine\n");
    let before = snapshot(repo.path());
    let found = checkout(repo.path());
    assert!(found.dirty);

    let runs = tempfile::tempdir().expect("temp");
    let worktree = runs.path().join("run1/worktree");
    let run = RunBranch::start(&found, "weft/run/01RUN1", &worktree).expect("start");
    assert_eq!(run.base_sha, found.head_sha);
    assert_eq!(
        git(&worktree, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "weft/run/01RUN1"
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("a.txt")).expect("read"),
        "one\n",
        "the worktree starts from the committed HEAD, without the user's changes"
    );
    assert!(!worktree.join("staged.txt").exists() && !worktree.join("scratch.txt").exists());

    // A stage's work, committed.
    write(&worktree, "a.txt", "one\nand more\n");
    std::fs::remove_file(worktree.join("b.txt")).expect("rm");
    write(&worktree, "src/new.rs", "fn new() {}\n");
    let stage = run
        .commit_stage("weft(01RUN1): fix (succeeded)\n\nWeft-Run: 01RUN1\nWeft-Completed: 1\n")
        .expect("commit");
    assert_eq!(
        before,
        snapshot(repo.path()),
        "the user's checkout is byte-for-byte unchanged"
    );
    let sha = stage.sha.expect("a commit");
    assert_eq!(stage.head_sha, sha);
    assert_eq!(stage.files, ["a.txt", "b.txt", "src/new.rs"]);
    assert!(stage.patch.contains("+and more\n"), "{}", stage.patch);
    assert!(stage.patch.contains("-two\n"), "{}", stage.patch);
    assert!(stage.patch.contains("+fn new() {}\n"), "{}", stage.patch);
    assert_eq!(
        git(repo.path(), &["rev-parse", "weft/run/01RUN1"]).trim(),
        sha,
        "the branch is in the user's repository"
    );
    assert_eq!(
        git(
            repo.path(),
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Weft-Run,valueonly)",
                &sha
            ]
        )
        .trim(),
        "01RUN1"
    );
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%an <%ae>", &sha]).trim(),
        "Weft <weft@localhost>"
    );
    // The patch applies to the base as git reads it.
    let check = tempfile::tempdir().expect("temp");
    git(
        repo.path(),
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &check.path().join("w").to_string_lossy(),
            &run.base_sha,
        ],
    );
    let patch_file = check.path().join("stage.patch");
    std::fs::write(&patch_file, &stage.patch).expect("write patch");
    git(
        &check.path().join("w"),
        &["apply", "--check", &patch_file.to_string_lossy()],
    );
}

#[test]
fn a_stage_that_changes_nothing_makes_no_commit_and_ignored_files_are_never_staged() {
    let repo = repo_with(&[(".gitignore", "target/\n*.log\n"), ("a.txt", "a\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let run = RunBranch::start(
        &checkout(repo.path()),
        "weft/run/02",
        &runs.path().join("w"),
    )
    .expect("start");
    let quiet = run.commit_stage("nothing").expect("commit");
    assert_eq!(quiet.sha, None);
    assert_eq!(quiet.head_sha, run.base_sha);
    assert!(quiet.patch.is_empty() && quiet.files.is_empty());

    write(&run.worktree, "target/debug/big.bin", "build output\n");
    write(&run.worktree, "run.log", "log\n");
    write(&run.worktree, ".env.example", "KEY=\n");
    let stage = run.commit_stage("dotfile").expect("commit");
    assert_eq!(
        stage.files,
        [".env.example"],
        "ignored files stay out, dotfiles are in"
    );
    let tree = git(&run.worktree, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        !tree.contains("big.bin") && !tree.contains("run.log"),
        "{tree}"
    );
}

#[test]
fn two_runs_on_one_repository_get_their_own_branches_and_an_existing_branch_is_refused() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let found = checkout(repo.path());
    let runs = tempfile::tempdir().expect("temp");
    let first = RunBranch::start(&found, "weft/run/A", &runs.path().join("a")).expect("start a");
    let second = RunBranch::start(&found, "weft/run/B", &runs.path().join("b")).expect("start b");
    write(&first.worktree, "a.txt", "from A\n");
    write(&second.worktree, "a.txt", "from B\n");
    let a = first.commit_stage("A").expect("commit a").sha.expect("sha");
    let b = second
        .commit_stage("B")
        .expect("commit b")
        .sha
        .expect("sha");
    assert_ne!(a, b);
    assert_eq!(git(repo.path(), &["show", "weft/run/A:a.txt"]), "from A\n");
    assert_eq!(git(repo.path(), &["show", "weft/run/B:a.txt"]), "from B\n");

    let error = RunBranch::start(&found, "weft/run/A", &runs.path().join("c")).expect_err("taken");
    assert!(error.0.contains("exists already"), "{error}");
    let error =
        RunBranch::start(&found, "weft/run/C", &runs.path().join("a")).expect_err("place taken");
    assert!(error.0.contains("must be a new directory"), "{error}");
}

#[test]
fn the_metadata_branch_is_an_orphan_written_without_a_checkout_and_keeps_earlier_files() {
    let repo = repo_with(&[("a.txt", "a\n"), ("sub/dir/b.txt", "b\n")]);
    let before = snapshot(repo.path());
    let meta = MetadataBranch::new(&repo.path().join("sub/dir"), "weft/meta/01M");
    let first = meta
        .write(
            "weft(01M): start",
            &[("run.json", b"{\"v\":1}"), ("graph.fabro", b"digraph G {}")],
        )
        .expect("first write");
    let second = meta
        .write(
            "weft(01M): plan",
            &[
                ("run.json", b"{\"v\":2}"),
                ("stages/001-plan@1/status.json", b"{\"status\":\"success\"}"),
            ],
        )
        .expect("second write");
    assert_eq!(before, snapshot(repo.path()), "no checkout was touched");
    let root = repo.path();
    assert_eq!(git(root, &["rev-parse", "weft/meta/01M"]).trim(), second);
    assert_eq!(
        git(root, &["rev-parse", &format!("{second}^")]).trim(),
        first
    );
    assert_eq!(git(root, &["show", "weft/meta/01M:run.json"]), "{\"v\":2}");
    assert_eq!(
        git(root, &["show", "weft/meta/01M:graph.fabro"]),
        "digraph G {}"
    );
    assert_eq!(
        git(
            root,
            &["show", "weft/meta/01M:stages/001-plan@1/status.json"]
        ),
        "{\"status\":\"success\"}"
    );
    let unrelated = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["merge-base", "main", "weft/meta/01M"])
        .output()
        .expect("git runs");
    assert!(
        !unrelated.status.success(),
        "an orphan: no history in common with main"
    );

    for bad in ["", "/etc/passwd", "a/../b", "a//b"] {
        let error = meta.write("bad", &[(bad, b"x")]).expect_err(bad);
        assert!(error.0.contains("not a path inside"), "{error}");
    }
    assert_eq!(
        git(root, &["rev-parse", "weft/meta/01M"]).trim(),
        second,
        "a refused write commits nothing"
    );
}

#[test]
fn a_stage_commit_carries_the_run_the_count_and_the_metadata_commit_as_trailers() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let run = RunBranch::start(
        &checkout(repo.path()),
        "weft/run/01T",
        &runs.path().join("w"),
    )
    .expect("start");
    let meta = MetadataBranch::new(repo.path(), "weft/meta/01T")
        .write("checkpoint", &[("run.json", b"{}")])
        .expect("meta");
    write(&run.worktree, "a.txt", "b\n");
    let message = stage_message("01T", "fix", "succeeded", 2, Some(&meta));
    assert_eq!(
        message,
        format!(
            "weft(01T): fix (succeeded)\n\nWeft-Run: 01T\nWeft-Completed: 2\nWeft-Checkpoint: {meta}\n"
        )
    );
    let sha = run
        .commit_stage(&message)
        .expect("commit")
        .sha
        .expect("sha");
    let trailer = |key: &str| {
        git(
            repo.path(),
            &[
                "log",
                "-1",
                &format!("--format=%(trailers:key={key},valueonly)"),
                &sha,
            ],
        )
        .trim()
        .to_string()
    };
    assert_eq!(trailer("Weft-Run"), "01T");
    assert_eq!(trailer("Weft-Completed"), "2");
    assert_eq!(trailer("Weft-Checkpoint"), meta);
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s", &sha]).trim(),
        "weft(01T): fix (succeeded)"
    );
    assert!(!stage_message("01T", "fix", "failed", 1, None).contains("Weft-Checkpoint"));
}

#[test]
fn a_stage_patch_is_cut_at_its_limit_and_says_so_while_the_commit_has_everything() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let mut run = RunBranch::start(
        &checkout(repo.path()),
        "weft/run/03",
        &runs.path().join("w"),
    )
    .expect("start");
    write(&run.worktree, "small.txt", "small\n");
    let whole = run.commit_stage("small").expect("commit");
    assert!(whole.patch_complete && whole.patch.contains("+small\n"));

    run.max_patch_bytes = 2_000;
    let big: String = (0..1_000).map(|i| format!("line {i}\n")).collect();
    write(&run.worktree, "big.txt", &big);
    let stage = run.commit_stage("big").expect("commit");
    assert!(!stage.patch_complete, "the patch was cut");
    assert!(stage.patch.len() <= 2_000, "{}", stage.patch.len());
    assert!(stage.patch.ends_with('\n'), "cut at a line's end");
    assert_eq!(stage.files, ["big.txt"]);
    let sha = stage.sha.expect("a commit");
    assert_eq!(git(repo.path(), &["show", &format!("{sha}:big.txt")]), big);
}

/// After a stage's commit the worktree is clean as git sees it (nothing
/// unstaged, untracked or staged-but-uncommitted), the index's tree is the
/// commit's, and every object the branch reaches is in the repository.
fn assert_committed_whole(repo: &Path, worktree: &Path) {
    assert_eq!(
        git(
            worktree,
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        "",
        "every change is in the commit"
    );
    assert_eq!(
        git(worktree, &["write-tree"]).trim(),
        git(worktree, &["rev-parse", "HEAD^{tree}"]).trim(),
        "the index is the commit's tree"
    );
    git(repo, &["fsck", "--no-dangling", "--no-progress"]);
}

/// `git ls-tree -r HEAD` as `mode path` lines.
fn tree_listing(worktree: &Path) -> Vec<String> {
    git(worktree, &["ls-tree", "-r", "HEAD"])
        .lines()
        .map(|line| {
            let (meta, path) = line.split_once('\t').expect("tab");
            format!("{} {path}", meta.split(' ').next().expect("mode"))
        })
        .collect()
}

#[cfg(unix)]
#[test]
fn every_kind_of_change_is_committed_new_dirs_deletions_modes_symlinks_and_what_a_stage_staged() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let repo = repo_with(&[
        ("a.txt", "a\n"),
        ("script.sh", "echo hi\n"),
        ("gone/only.txt", "only\n"),
        ("becomes_link.txt", "text\n"),
        ("thing", "a file, then a directory\n"),
        ("dir/x.txt", "a directory, then a file\n"),
        ("keep/deep/k.txt", "k\n"),
    ]);
    let runs = tempfile::tempdir().expect("temp");
    let run = RunBranch::start(
        &checkout(repo.path()),
        "weft/run/kinds",
        &runs.path().join("w"),
    )
    .expect("start");
    let w = &run.worktree;

    write(w, "new/nested/deeper/n.txt", "new\n");
    write(w, "keep/deep/k2.txt", "k2\n");
    std::fs::remove_file(w.join("gone/only.txt")).expect("rm");
    std::fs::set_permissions(w.join("script.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    symlink("a.txt", w.join("link")).expect("symlink");
    std::fs::remove_file(w.join("becomes_link.txt")).expect("rm");
    symlink("a.txt", w.join("becomes_link.txt")).expect("symlink");
    // A command stage may stage work itself.
    write(w, "staged_by_stage.txt", "staged\n");
    git(w, &["add", "staged_by_stage.txt"]);
    let stage = run.commit_stage("kinds").expect("commit");
    assert_eq!(
        stage.files,
        [
            "becomes_link.txt",
            "gone/only.txt",
            "keep/deep/k2.txt",
            "link",
            "new/nested/deeper/n.txt",
            "script.sh",
            "staged_by_stage.txt"
        ]
    );
    assert_committed_whole(repo.path(), w);
    let listing = tree_listing(w);
    for line in [
        "100755 script.sh",
        "120000 link",
        "120000 becomes_link.txt",
        "100644 new/nested/deeper/n.txt",
        "100644 keep/deep/k.txt",
        "100644 keep/deep/k2.txt",
        "100644 staged_by_stage.txt",
    ] {
        assert!(listing.iter().any(|l| l == line), "{line} in {listing:?}");
    }
    assert!(
        !listing.iter().any(|l| l.contains("gone/")),
        "an emptied directory leaves the tree: {listing:?}"
    );

    // A file become a directory, and a directory become a file.
    std::fs::remove_file(w.join("thing")).expect("rm");
    write(w, "thing/inside.txt", "inside\n");
    std::fs::remove_dir_all(w.join("dir")).expect("rm dir");
    write(w, "dir", "now a file\n");
    let stage = run.commit_stage("swaps").expect("commit");
    assert_eq!(
        stage.files,
        ["dir", "dir/x.txt", "thing", "thing/inside.txt"]
    );
    assert_committed_whole(repo.path(), w);
    let listing = tree_listing(w);
    assert!(
        listing.iter().any(|l| l == "100644 thing/inside.txt"),
        "{listing:?}"
    );
    assert!(listing.iter().any(|l| l == "100644 dir"), "{listing:?}");
    assert!(
        !listing
            .iter()
            .any(|l| l == "100644 thing" || l.contains("dir/")),
        "{listing:?}"
    );
}

#[test]
fn a_change_that_keeps_the_size_is_seen_even_right_after_the_index_was_written() {
    // git's "racy" entries: a file written in the same clock tick as the
    // index has the stat data the index recorded; only its content tells.
    let repo = repo_with(&[("a.txt", "v00\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let run = RunBranch::start(
        &checkout(repo.path()),
        "weft/run/racy",
        &runs.path().join("w"),
    )
    .expect("start");
    // Right after the worktree's checkout wrote its index.
    write(&run.worktree, "a.txt", "v01\n");
    let first = run.commit_stage("first").expect("commit");
    assert_eq!(first.files, ["a.txt"], "the change after the checkout");
    let mut last = first.sha.expect("a commit");
    for round in 2..8 {
        // Right after the previous stage's commit wrote the index.
        write(&run.worktree, "a.txt", &format!("v{round:02}\n"));
        let stage = run.commit_stage("again").expect("commit");
        let sha = stage.sha.expect("a same-size change is committed");
        assert_ne!(sha, last);
        assert_eq!(
            git(repo.path(), &["show", &format!("{sha}:a.txt")]),
            format!("v{round:02}\n")
        );
        last = sha;
    }
    assert_committed_whole(repo.path(), &run.worktree);
}

#[test]
fn a_stage_that_wrote_more_than_memory_should_hold_is_committed_whole_all_the_same() {
    // Past 64 MiB of changed files a stage's objects are written loose,
    // one file each, instead of held in memory for one pack.
    let repo = repo_with(&[("a.txt", "a\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let run = RunBranch::start(
        &checkout(repo.path()),
        "weft/run/huge",
        &runs.path().join("w"),
    )
    .expect("start");
    let line = "a line of a large generated file, repeated\n";
    let big = line.repeat(65 * 1024 * 1024 / line.len() + 1);
    write(&run.worktree, "gen/big.txt", &big);
    write(&run.worktree, "a.txt", "b\n");
    let packs_before = std::fs::read_dir(repo.path().join(".git/objects/pack"))
        .map(|d| d.count())
        .unwrap_or(0);
    let stage = run.commit_stage("huge").expect("commit");
    let sha = stage.sha.expect("a commit");
    assert_eq!(stage.files, ["a.txt", "gen/big.txt"]);
    assert_eq!(
        git(
            repo.path(),
            &["cat-file", "-s", &format!("{sha}:gen/big.txt")]
        )
        .trim(),
        big.len().to_string()
    );
    assert_eq!(
        std::fs::read_dir(repo.path().join(".git/objects/pack"))
            .map(|d| d.count())
            .unwrap_or(0),
        packs_before,
        "no pack: the objects are loose"
    );
    assert_committed_whole(repo.path(), &run.worktree);

    // The next, small stage is packed again.
    write(&run.worktree, "a.txt", "c\n");
    run.commit_stage("small").expect("commit").sha.expect("sha");
    assert!(
        std::fs::read_dir(repo.path().join(".git/objects/pack"))
            .expect("pack dir")
            .count()
            > packs_before,
        "a small stage's objects are one pack"
    );
    assert_committed_whole(repo.path(), &run.worktree);
}

#[test]
fn reopening_a_run_branch_clears_its_stale_locks_and_packs_abandoned_an_hour_ago() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let worktree = runs.path().join("w");
    let run = RunBranch::start(&checkout(repo.path()), "weft/run/stale", &worktree).expect("start");
    let base = run.base_sha.clone();
    // What a kill in the middle of a checkpoint leaves.
    let git_dir = repo.path().join(".git");
    let lock = git_dir.join("worktrees/weft-run-stale/index.lock");
    std::fs::write(&lock, "").expect("lock");
    let packs = git_dir.join("objects/pack");
    std::fs::create_dir_all(&packs).expect("pack dir");
    let old = packs.join("pack_git2_abandoned");
    std::fs::write(&old, "PACK").expect("old pack");
    std::fs::File::options()
        .write(true)
        .open(&old)
        .and_then(|f| {
            f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200))
        })
        .expect("age it");
    // Another process's pack, being written now.
    let fresh = packs.join("pack_git2_in_progress");
    std::fs::write(&fresh, "PACK").expect("fresh pack");

    RunBranch::reopen(repo.path(), "weft/run/stale", &base, &worktree).expect("reopen");
    assert!(!lock.exists(), "the index lock is gone");
    assert!(!old.exists(), "the abandoned pack is gone");
    assert!(fresh.exists(), "a pack written now is left alone");
}
