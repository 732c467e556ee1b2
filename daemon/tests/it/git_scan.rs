//! A stage's changes found by the walk (`weft::git::Checkpointer`, while
//! the index is as the last checkpoint left it) must be exactly what `git
//! add -A` finds: each checkpoint's tree is compared with the one the `git`
//! CLI builds from the same worktree in an index of its own.

#![allow(clippy::expect_used)]

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;

use weft::git::{Checkpoint, Checkpointer, MetadataBranch, RunBranch, ScanKind, stage_message};

use crate::git::{checkout, git, repo_with, write};

/// The tree `git add -A` makes of the worktree on top of `parent`, built in
/// a scratch index: the worktree's own index is left alone, so the next
/// checkpoint still walks.
fn tree_git_would_commit(worktree: &Path, parent: &str, scratch: &Path) -> String {
    let index = scratch.join("index");
    let _ = std::fs::remove_file(&index);
    let run = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(worktree)
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    run(&["read-tree", parent]);
    run(&["add", "-A"]);
    run(&["write-tree"])
}

struct Stages {
    checkpointer: Checkpointer,
    worktree: std::path::PathBuf,
    repo: std::path::PathBuf,
    scratch: tempfile::TempDir,
    count: u32,
}

impl Stages {
    fn start(repo: &Path, runs: &Path, name: &str) -> Stages {
        let branch = RunBranch::start(
            &checkout(repo),
            &format!("weft/run/{name}"),
            &runs.join(name),
        )
        .expect("start");
        Stages {
            worktree: branch.worktree.clone(),
            checkpointer: Checkpointer::new(
                branch,
                MetadataBranch::new(repo, &format!("weft/meta/{name}")),
            ),
            repo: repo.to_path_buf(),
            scratch: tempfile::tempdir().expect("temp"),
            count: 0,
        }
    }

    /// Checkpoints a stage and checks its tree against git's.
    fn checkpoint(&mut self) -> Checkpoint {
        self.count += 1;
        let parent = git(&self.worktree, &["rev-parse", "HEAD"]);
        let expected = tree_git_would_commit(&self.worktree, parent.trim(), self.scratch.path());
        let count = self.count;
        let checkpoint = self
            .checkpointer
            .checkpoint(
                "checkpoint",
                &[("checkpoint.json", format!("{{\"n\":{count}}}").as_bytes())],
                |sha| stage_message("scan", "stage", "succeeded", count, Some(sha)),
            )
            .expect("checkpoint");
        assert_eq!(
            git(&self.worktree, &["rev-parse", "HEAD^{tree}"]).trim(),
            expected,
            "stage {count} ({:?}) committed what git add -A would",
            checkpoint.scan
        );
        checkpoint
    }
}

#[test]
fn the_walk_takes_over_after_the_first_checkpoint_and_finds_every_kind_of_change() {
    let repo = repo_with(&[
        (".gitignore", "*.log\nbuild/\n"),
        ("a.txt", "a\n"),
        ("script.sh", "echo hi\n"),
        ("gone/only.txt", "only\n"),
        ("becomes_link.txt", "text\n"),
        ("thing", "a file, then a directory\n"),
        ("dir/x.txt", "a directory, then a file\n"),
        ("keep/deep/k.txt", "k\n"),
        ("same/s.txt", "same\n"),
    ]);
    let runs = tempfile::tempdir().expect("temp");
    let mut stages = Stages::start(repo.path(), runs.path(), "kinds");
    let w = stages.worktree.clone();

    write(&w, "first.txt", "1\n");
    let first = stages.checkpoint();
    assert_eq!(first.scan, ScanKind::Status, "nothing to trust yet");

    write(&w, "new/nested/deeper/n.txt", "new\n");
    write(&w, "keep/deep/k2.txt", "k2\n");
    write(&w, "keep/deep/k.txt", "K\n");
    std::fs::remove_file(w.join("gone/only.txt")).expect("rm");
    std::fs::set_permissions(w.join("script.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    symlink("a.txt", w.join("link")).expect("symlink");
    std::fs::remove_file(w.join("becomes_link.txt")).expect("rm");
    symlink("a.txt", w.join("becomes_link.txt")).expect("symlink");
    // Ignored: by pattern in a tracked directory, a whole ignored
    // directory, and by a .gitignore of a new directory.
    write(&w, "keep/noise.log", "ignored\n");
    write(&w, "build/out/bin.o", "ignored\n");
    write(&w, "fresh/.gitignore", "*.tmp\n");
    write(&w, "fresh/x.tmp", "ignored\n");
    write(&w, "fresh/y.txt", "kept\n");
    // Rewritten with the same bytes: a candidate, not a change.
    write(&w, "same/s.txt", "same\n");
    let stage = stages.checkpoint();
    assert_eq!(stage.scan, ScanKind::Walk);
    assert_eq!(
        stage.stage.files,
        [
            "becomes_link.txt",
            "fresh/.gitignore",
            "fresh/y.txt",
            "gone/only.txt",
            "keep/deep/k.txt",
            "keep/deep/k2.txt",
            "link",
            "new/nested/deeper/n.txt",
            "script.sh",
        ]
    );

    // A file become a directory, a directory become a file.
    std::fs::remove_file(w.join("thing")).expect("rm");
    write(&w, "thing/inside.txt", "inside\n");
    std::fs::remove_dir_all(w.join("dir")).expect("rm dir");
    write(&w, "dir", "now a file\n");
    let stage = stages.checkpoint();
    assert_eq!(stage.scan, ScanKind::Walk);
    assert_eq!(
        stage.stage.files,
        ["dir", "dir/x.txt", "thing", "thing/inside.txt"]
    );

    // Nothing changed: no commit, and the walk still says so.
    let stage = stages.checkpoint();
    assert_eq!(stage.scan, ScanKind::Walk);
    assert_eq!(stage.stage.sha, None);

    // A stage that staged work itself moved the index: libgit2 scans.
    write(&w, "staged_by_stage.txt", "staged\n");
    git(&w, &["add", "staged_by_stage.txt"]);
    let stage = stages.checkpoint();
    assert_eq!(stage.scan, ScanKind::Status);
    assert_eq!(stage.stage.files, ["staged_by_stage.txt"]);

    // And one that committed moved the head: libgit2 again, then the walk.
    write(&w, "committed_by_stage.txt", "c\n");
    git(&w, &["add", "committed_by_stage.txt"]);
    git(
        &w,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@localhost",
            "commit",
            "-qm",
            "by the stage",
        ],
    );
    write(&w, "after.txt", "after\n");
    assert_eq!(stages.checkpoint().scan, ScanKind::Status);
    write(&w, "after.txt", "after, again\n");
    assert_eq!(stages.checkpoint().scan, ScanKind::Walk);
    git(&stages.repo, &["fsck", "--no-dangling", "--no-progress"]);
}

#[test]
fn a_same_size_change_right_after_a_checkpoint_is_seen_by_the_walk() {
    // git's "racy" entries: a file rewritten in the clock tick the index
    // was written in keeps the stat data the index recorded but for the
    // time, which may be equal; only the content tells.
    let repo = repo_with(&[("a.txt", "v00\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let mut stages = Stages::start(repo.path(), runs.path(), "racy");
    let w = stages.worktree.clone();
    for round in 1..12 {
        write(&w, "a.txt", &format!("v{round:02}\n"));
        let stage = stages.checkpoint();
        assert!(stage.stage.sha.is_some(), "round {round} committed");
        if round > 1 {
            assert_eq!(stage.scan, ScanKind::Walk);
        }
    }
}

#[test]
fn a_repository_inside_the_worktree_is_left_to_libgit2() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let runs = tempfile::tempdir().expect("temp");
    let mut stages = Stages::start(repo.path(), runs.path(), "nested");
    let w = stages.worktree.clone();
    write(&w, "b.txt", "b\n");
    stages.checkpoint();
    write(&w, "vendor/lib/.git/HEAD", "ref: refs/heads/main\n");
    write(&w, "c.txt", "c\n");
    let parent = git(&w, &["rev-parse", "HEAD"]);
    let count = 9;
    let result = stages.checkpointer.checkpoint("checkpoint", &[], |sha| {
        stage_message("scan", "stage", "succeeded", count, Some(sha))
    });
    // Whatever libgit2 makes of it, the walk did not decide.
    if let Ok(stage) = result {
        assert_eq!(stage.scan, ScanKind::Status);
        assert!(stage.stage.files.contains(&"c.txt".to_string()));
    } else {
        assert_eq!(git(&w, &["rev-parse", "HEAD"]), parent, "nothing moved");
    }
}

/// A small deterministic generator: the same sequence every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn random_stages_commit_what_git_add_all_would_and_keep_the_repository_whole() {
    let mut files = vec![(".gitignore".to_string(), "*.log\nignored/\n".to_string())];
    for i in 0..60 {
        files.push((
            format!("d{}/e{}/f{i}.txt", i % 4, i % 3),
            format!("file {i}\n"),
        ));
    }
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = repo_with(&borrowed);
    let runs = tempfile::tempdir().expect("temp");
    let mut stages = Stages::start(repo.path(), runs.path(), "random");
    let w = stages.worktree.clone();
    let mut rng = Lcg(17);
    let mut walked = 0;
    for stage in 0..40 {
        for _ in 0..1 + rng.below(6) {
            let d = rng.below(5);
            let e = rng.below(4);
            let f = rng.below(80);
            let path = format!("d{d}/e{e}/f{f}.txt");
            let full = w.join(&path);
            match rng.below(9) {
                // New or changed content, sometimes the same size.
                0 | 1 => write(&w, &path, &format!("file {f} at {stage}\n")),
                2 => write(&w, &path, &format!("file {f}\n")),
                3 => {
                    let _ = std::fs::remove_file(&full);
                }
                4 => {
                    let _ = std::fs::remove_dir_all(w.join(format!("d{d}/e{e}")));
                }
                5 => {
                    if full.is_file() {
                        let mode = if rng.below(2) == 0 { 0o755 } else { 0o644 };
                        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode))
                            .expect("chmod");
                    }
                }
                6 => write(&w, &format!("d{d}/e{e}/noise{f}.log"), "ignored\n"),
                7 => write(&w, &format!("ignored/{f}/x.txt"), "ignored\n"),
                _ => {
                    if !full.exists() && full.parent().is_some_and(Path::is_dir) {
                        let _ = symlink(format!("f{}.txt", rng.below(80)), &full);
                    }
                }
            }
        }
        if stages.checkpoint().scan == ScanKind::Walk {
            walked += 1;
        }
    }
    assert_eq!(walked, 39, "every stage but the first walked");
    git(&stages.repo, &["fsck", "--no-dangling", "--no-progress"]);
}
