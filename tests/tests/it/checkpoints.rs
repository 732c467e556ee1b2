//! Git checkpoint mode over the real binaries (docs/git.md): a run killed
//! with -9 resumes from its last commit with the half-done stage undone,
//! its worktree recreated when it was deleted and the lock files a kill
//! mid-commit leaves cleared; the repository stays consistent (`git fsck`).
//! Repositories are built with git2 in the sandbox and checked with the
//! `git` CLI.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weft::model::RunStatus;
use weft::store::{Home, RunRecord, Store};
use weft_tests::{Sandbox, git, git_repo, lcg};

/// A repository at `{sandbox}/repo` with `files` committed on `main`.
fn repo(sb: &Sandbox, files: &[(&str, &str)]) -> PathBuf {
    let root = sb.path().join("repo");
    git_repo(&root, files);
    root
}

fn only_run(sb: &Sandbox) -> Option<RunRecord> {
    let store = Store::open_read_only(&Home::at(sb.path().join("home"))).ok()?;
    store
        .list_runs(&Default::default())
        .ok()?
        .into_iter()
        .next()
}

/// Starts `weft run --no-daemon wf.fabro --work-dir repo`, waits until
/// `ready` holds (at most 30 s) and a further `settle`, then kills weft and
/// its stage's process group with -9, as a crash would.
fn kill_run_when(sb: &Sandbox, ready: impl Fn() -> bool, settle: Duration) -> RunRecord {
    let mut child = sb
        .weft()
        .args(["run", "--no-daemon", "wf.fabro", "--work-dir", "repo"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() && Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            break; // it ended before the moment came
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(settle);
    let pid = child.id();
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let _ = child.wait();
    // The stage's group, which a killed weft leaves behind.
    if let Ok(pgid) = std::fs::read_to_string(sb.path().join("stage.pgid")) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", pgid.trim())])
            .stderr(Stdio::null())
            .status();
    }
    only_run(sb).unwrap_or_else(|| panic!("a run was recorded"))
}

/// `one` commits a file; `two` first notes whether it finds the file its
/// killed attempt left, writes that file, then waits for `go`.
fn two_stages(sb: &Sandbox) -> String {
    let dir = sb.path().display();
    format!(
        r#"digraph D {{ start [shape=Mdiamond]; exit [shape=Msquare]
           one [shape=parallelogram, script="echo one > one.txt"]
           two [shape=parallelogram, script="if [ -f junk.txt ]; then echo saw > saw-junk.txt; fi; echo junk > junk.txt; if [ ! -f {dir}/go ]; then echo $$ > {dir}/stage.pgid; while [ ! -f {dir}/go ]; do sleep 0.05; done; fi; echo two > two.txt"]
           start -> one -> two -> exit }}"#
    )
}

fn worktree(record: &RunRecord) -> PathBuf {
    record.run_dir.join("worktree")
}

#[test]
fn a_killed_run_resumes_from_its_last_commit_with_the_half_done_stage_undone() {
    let sb = Sandbox::new();
    let root = repo(&sb, &[("README", "hi\n")]);
    sb.write("wf.fabro", two_stages(&sb));
    let pgid = sb.path().join("stage.pgid");
    let record = kill_run_when(&sb, || pgid.is_file(), Duration::from_millis(50));
    let worktree = worktree(&record);
    assert!(worktree.join("junk.txt").is_file(), "two had started");

    sb.write("go", "");
    let resumed = sb.run(&["resume", "--no-daemon", &record.id]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let branch = format!("weft/run/{}", record.id);
    let files = git(&root, &["ls-tree", "-r", "--name-only", &branch]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["README", "junk.txt", "one.txt", "two.txt"],
        "the half-done attempt of two was reset before it ran again"
    );
    let subjects = git(&root, &["log", "--format=%s", "main..", &branch]);
    assert_eq!(subjects.lines().count(), 2, "{subjects}");
    git(&root, &["fsck", "--no-progress"]);
}

#[test]
fn a_resume_recreates_a_deleted_worktree_and_clears_the_locks_a_killed_commit_left() {
    let sb = Sandbox::new();
    let root = repo(&sb, &[("README", "hi\n")]);
    sb.write("wf.fabro", two_stages(&sb));
    let pgid = sb.path().join("stage.pgid");
    let record = kill_run_when(&sb, || pgid.is_file(), Duration::from_millis(50));
    let branch = format!("weft/run/{}", record.id);
    std::fs::remove_dir_all(worktree(&record)).unwrap_or_else(|e| panic!("rm: {e}"));
    // The locks a process killed inside a checkpoint commit leaves.
    let common = root.join(".git");
    let name = branch.replace('/', "-");
    for lock in [
        common.join(format!("refs/heads/{branch}.lock")),
        common.join(format!("refs/heads/weft/meta/{}.lock", record.id)),
        common.join("worktrees").join(&name).join("index.lock"),
    ] {
        if let Some(parent) = lock.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
        }
        std::fs::write(&lock, "").unwrap_or_else(|e| panic!("lock: {e}"));
    }

    sb.write("go", "");
    let resumed = sb.run(&["resume", "--no-daemon", &record.id]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(git(&root, &["show", &format!("{branch}:two.txt")]), "two\n");
    let worktrees = git(&root, &["worktree", "list", "--porcelain"]);
    assert!(
        !worktrees.contains("prunable"),
        "git's record of the worktree is current: {worktrees}"
    );
    git(&root, &["fsck", "--no-progress"]);
}

/// Many stages that each write many files, so that a kill often lands
/// inside a checkpoint's commit.
fn busy_stages(n: usize) -> String {
    let mut nodes = String::new();
    let mut chain = String::from("start");
    for i in 0..n {
        nodes.push_str(&format!(
            "s{i} [shape=parallelogram, script=\"mkdir -p d{i}; for f in $(seq 1 200); do echo {i}-$f > d{i}/$f.txt; done\"]\n"
        ));
        chain.push_str(&format!(" -> s{i}"));
    }
    format!(
        "digraph Busy {{ start [shape=Mdiamond]; exit [shape=Msquare]\n{nodes}{chain} -> exit }}"
    )
}

#[test]
fn runs_killed_at_random_moments_of_their_checkpoints_resume_to_a_consistent_repository() {
    const STAGES: usize = 6;
    let mut seed = 17;
    for round in 0..4 {
        let sb = Sandbox::new();
        let root = repo(&sb, &[("README", "hi\n")]);
        sb.write("wf.fabro", busy_stages(STAGES));
        seed = lcg(seed);
        let settle = Duration::from_millis(seed % 400);
        let home = Home::at(sb.path().join("home"));
        // Kill once the run has started checkpointing, somewhere after.
        let started = || {
            Store::open_read_only(&home)
                .ok()
                .and_then(|s| s.list_runs(&Default::default()).ok())
                .and_then(|runs| runs.into_iter().next())
                .is_some_and(|r| r.checkpoint.is_some())
        };
        let record = kill_run_when(&sb, started, settle);
        if record.status != RunStatus::Succeeded {
            let resumed = sb.run(&["resume", "--no-daemon", &record.id]);
            assert_eq!(resumed.code, 0, "round {round}: {}", resumed.stderr);
        }
        let branch = format!("weft/run/{}", record.id);
        for i in 0..STAGES {
            assert_eq!(
                git(&root, &["show", &format!("{branch}:d{i}/200.txt")]),
                format!("{i}-200\n"),
                "round {round}: stage s{i}'s files are on the branch"
            );
        }
        let subjects = git(&root, &["log", "--format=%s", "main..", &branch]);
        assert_eq!(
            subjects.lines().count(),
            STAGES,
            "round {round}: one commit per stage, none repeated: {subjects}"
        );
        git(&root, &["fsck", "--no-progress"]);
        assert!(
            git(&root, &["status", "--porcelain"]).is_empty(),
            "round {round}: the user's checkout is untouched"
        );
    }
}

const WRITES: &str = r#"digraph W { start [shape=Mdiamond]; exit [shape=Msquare]
  write [shape=parallelogram, script="echo hello > hello.txt"]
  start -> write -> exit }"#;

#[test]
fn logs_diff_prints_a_stages_and_the_whole_runs_changes_and_dump_keeps_them() {
    let sb = Sandbox::new();
    let root = repo(&sb, &[("README", "hi\n")]);
    sb.write("wf.fabro", WRITES);
    // Through the daemon: the run is checkpointed there too.
    let ran = sb.run(&["run", "wf.fabro", "--work-dir", "repo"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("checkpoints: the run works in"),
        "{}",
        ran.stderr
    );

    let whole = sb.run(&["logs", "last", "--diff"]);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    assert!(
        whole
            .stdout
            .contains("+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello"),
        "{}",
        whole.stdout
    );
    let stage = sb.run(&["logs", "last", "write", "--diff"]);
    assert_eq!(stage.code, 0, "{}", stage.stderr);
    assert!(
        stage.stdout.starts_with("== write@1 (succeeded"),
        "{}",
        stage.stdout
    );
    assert!(stage.stdout.contains("+hello"), "{}", stage.stdout);

    let out = sb.path().join("dump");
    let dumped = sb.run(&["dump", "last", "--out", &out.display().to_string()]);
    assert_eq!(dumped.code, 0, "{}", dumped.stderr);
    let final_patch = std::fs::read_to_string(out.join("final.patch")).unwrap_or_default();
    assert!(final_patch.contains("+hello"), "{final_patch}");
    let stage_patch =
        std::fs::read_to_string(out.join("stages/002-write@1/diff.patch")).unwrap_or_default();
    assert_eq!(stage_patch, final_patch);

    // --no-checkpoint through the daemon: the run writes the checkout and
    // has no diffs.
    let in_place = sb.run(&["run", "wf.fabro", "--work-dir", "repo", "--no-checkpoint"]);
    assert_eq!(in_place.code, 0, "{}", in_place.stderr);
    assert!(root.join("hello.txt").is_file());
    let none = sb.run(&["logs", "last", "--diff"]);
    assert_eq!(none.code, 2, "{}", none.stdout);
    assert!(
        none.stderr.contains("was not checkpointed in git"),
        "{}",
        none.stderr
    );
}

#[test]
fn a_repository_a_run_cannot_branch_from_is_refused_before_anything_is_recorded() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path().join("repo")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    git2::Repository::init(sb.path().join("repo")).unwrap_or_else(|e| panic!("init: {e}"));
    sb.write("wf.fabro", WRITES);
    let refused = sb.run(&["run", "--no-daemon", "wf.fabro", "--work-dir", "repo"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("has no commits yet") && refused.stderr.contains("--no-checkpoint"),
        "{}",
        refused.stderr
    );
    assert!(only_run(&sb).is_none(), "nothing was recorded");
    let in_place = sb.run(&[
        "run",
        "--no-daemon",
        "wf.fabro",
        "--work-dir",
        "repo",
        "--no-checkpoint",
    ]);
    assert_eq!(in_place.code, 0, "{}", in_place.stderr);
}

/// Three stages that each write a file; `three` writes what the sandbox's
/// `count` file says, so a rerun is told apart.
fn three(sb: &Sandbox) -> String {
    format!(
        r#"digraph T {{ start [shape=Mdiamond]; exit [shape=Msquare]
  one   [shape=parallelogram, script="echo one > one.txt"]
  two   [shape=parallelogram, script="echo two > two.txt"]
  three [shape=parallelogram, script="echo three-$(cat {}/count 2>/dev/null) > three.txt"]
  start -> one -> two -> three -> exit }}"#,
        sb.path().display()
    )
}

fn json_of(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn rewind_replaces_an_ended_run_from_a_checkpoint_and_fork_keeps_the_source() {
    let sb = Sandbox::new();
    let root = repo(&sb, &[("README", "hi\n")]);
    sb.write("wf.fabro", three(&sb));
    let ran = sb.run(&["run", "wf.fabro", "--work-dir", "repo", "--json"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let source = json_of(&ran.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let source_branch = format!("weft/run/{source}");
    let source_head = git(&root, &["rev-parse", &source_branch]);

    // The timeline: every committed stage, with its commit.
    let list = sb.run(&["rewind", &source, "--list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    for node in ["start@1", "one@1", "two@1", "three@1", "exit@1"] {
        assert!(list.stdout.contains(node), "{}", list.stdout);
    }
    let timeline = json_of(&sb.run(&["fork", &source, "--list", "--json"]).stdout);
    let two_sha = timeline
        .as_array()
        .and_then(|t| t.iter().find(|e| e["node_id"] == "two"))
        .and_then(|e| e["git_commit_sha"].as_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        two_sha,
        git(&root, &["rev-parse", &format!("{source_branch}~1")]).trim()
    );

    // A target that is not there is refused with the timeline.
    let wrong = sb.run(&["rewind", &source, "nowhere"]);
    assert_eq!(wrong.code, 2);
    assert!(
        wrong.stderr.contains("no checkpoint `nowhere`") && wrong.stderr.contains("@3 two@1"),
        "{}",
        wrong.stderr
    );

    // Rewind to two: a new run whose branch starts at two's commit.
    let rewound = sb.run(&["rewind", &source, "two", "--json"]);
    assert_eq!(rewound.code, 0, "{}", rewound.stderr);
    let rewound = json_of(&rewound.stdout);
    let new = rewound["run_id"].as_str().unwrap_or_default().to_string();
    assert_eq!(rewound["archived_source"], true);
    let new_branch = format!("weft/run/{new}");
    assert_eq!(git(&root, &["rev-parse", &new_branch]).trim(), two_sha);
    let archived = sb.run(&["rewind", &source, "two"]);
    assert_eq!(archived.code, 2);
    assert!(archived.stderr.contains("archived"), "{}", archived.stderr);

    // Resuming it runs only what came after two.
    sb.write("count", "2");
    let resumed = sb.run(&["resume", &new, "--json"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let stages: Vec<String> = json_of(&resumed.stdout)["stages"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| s["node_id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        stages,
        ["start", "one", "two", "three", "exit"],
        "the history up to two is the new run's"
    );
    assert_eq!(
        git(&root, &["show", &format!("{new_branch}:three.txt")]),
        "three-2\n"
    );
    assert_eq!(
        git(&root, &["rev-parse", &format!("{new_branch}~1")]).trim(),
        two_sha
    );
    // The source's branch is as it was.
    assert_eq!(git(&root, &["rev-parse", &source_branch]), source_head);

    // A fork keeps its source (archived or not) and starts from the latest
    // checkpoint by default.
    let forked = sb.run(&["fork", &new, "--json"]);
    assert_eq!(forked.code, 0, "{}", forked.stderr);
    let forked = json_of(&forked.stdout);
    assert_eq!(forked["archived_source"], false);
    assert_eq!(forked["from"]["node_id"], "exit");
    let ps = sb.run(&["ps", "--all", "--json"]);
    assert!(ps.stdout.contains(&new), "{}", ps.stdout);
}

#[test]
fn a_run_still_running_cannot_be_rewound_or_forked() {
    let sb = Sandbox::new();
    repo(&sb, &[("README", "hi\n")]);
    sb.write("wf.fabro", two_stages(&sb));
    let started = sb.run(&["run", "wf.fabro", "--work-dir", "repo", "--detach"]);
    assert_eq!(started.code, 0, "{}", started.stderr);
    let pgid = sb.path().join("stage.pgid");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pgid.is_file() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for args in [["rewind", "last", "one"], ["fork", "last", "one"]] {
        let refused = sb.run(&args);
        assert_eq!(refused.code, 2, "{args:?}");
        assert!(refused.stderr.contains("is running"), "{}", refused.stderr);
    }
    sb.write("go", "");
}

#[test]
fn the_checkpointed_release_example_commits_each_change_in_a_scratch_repository() {
    let sb = Sandbox::new();
    let root = repo(
        &sb,
        &[
            ("VERSION", "1.4.2\n"),
            ("CHANGELOG.md", "## 1.4.2\n\n- first\n"),
        ],
    );
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/checkpointed-release.fabro");
    let ran = sb.run(&[
        "run",
        "--no-daemon",
        &example.display().to_string(),
        "--work-dir",
        "repo",
        "--json",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let id = json_of(&ran.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let branch = format!("weft/run/{id}");
    assert_eq!(
        git(&root, &["show", &format!("{branch}:VERSION")]),
        "1.4.3\n"
    );
    assert!(git(&root, &["show", &format!("{branch}:CHANGELOG.md")]).starts_with("## 1.4.3\n"));
    let subjects = git(&root, &["log", "--format=%s", "main..", &branch]);
    assert_eq!(
        subjects.lines().collect::<Vec<_>>(),
        [
            format!("weft({id}): changelog (succeeded)"),
            format!("weft({id}): bump (succeeded)"),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("VERSION")).unwrap_or_default(),
        "1.4.2\n"
    );
}

#[test]
fn run_toml_checkpoint_keys_include_the_dirty_checkout_or_turn_checkpoints_off() {
    let sb = Sandbox::new();
    let root = repo(&sb, &[("a.txt", "committed\n")]);
    std::fs::write(root.join("a.txt"), "uncommitted\n").unwrap_or_else(|e| panic!("{e}"));
    sb.write(
        "wf.fabro",
        r#"digraph D { start [shape=Mdiamond]; exit [shape=Msquare]
           copy [shape=parallelogram, script="cat a.txt > seen.txt"]
           start -> copy -> exit }"#,
    );
    let run_with = |toml: &str| {
        sb.write("run.toml", toml);
        let ran = sb.run(&["run", "--no-daemon", "run.toml", "--json"]);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
        json_of(&ran.stdout)["run_id"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    let id = run_with(
        "_version = 1\n[workflow]\ngraph = \"wf.fabro\"\n[run]\nworking_dir = \"repo\"\n[run.checkpoint]\ninclude_dirty = true\n",
    );
    let branch = format!("weft/run/{id}");
    assert_eq!(
        git(&root, &["show", &format!("{branch}:seen.txt")]),
        "uncommitted\n",
        "the stage saw the checkout's uncommitted change"
    );
    assert_eq!(
        git(&root, &["log", "--format=%s", "-1", &format!("{branch}~1")]).trim(),
        format!("weft({id}): the checkout's uncommitted changes"),
    );

    let id = run_with(
        "_version = 1\n[workflow]\ngraph = \"wf.fabro\"\n[run]\nworking_dir = \"repo\"\n[run.checkpoint]\nenabled = false\n",
    );
    assert!(
        git(&root, &["branch", "--list", &format!("weft/*/{id}")]).is_empty(),
        "no branches for a run with checkpoints off"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("seen.txt")).unwrap_or_default(),
        "uncommitted\n",
        "it ran in the checkout itself"
    );
}
