//! The cost of a git checkpoint per stage (issue 17, "Measured"): staging
//! the worktree's changes (a status scan of the whole tree), the commit on
//! the run branch, the metadata branch's commit and the stage's patch, with
//! 20 files changed per stage, on repositories of 1k, 10k and 100k files;
//! next to the `git` CLI doing the run-branch part (`git add -A`, `git
//! commit`, `git diff HEAD^ HEAD`).
//!
//! `cargo bench -p weft --bench checkpoint` (`-- --quick`: 1k and 10k
//! files only). Prints a Markdown table; asserts nothing.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use weft::git::{Checkout, Checkpointer, Discovery, MetadataBranch, RunBranch, stage_message};

#[path = "support/mod.rs"]
mod support;
use support::percentile;

const CHANGED: usize = 20;
const STAGES: usize = 15;

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "git {args:?} failed");
    Ok(())
}

/// A repository of `n` files of a few lines, 100 per directory, committed.
fn repository(root: &Path, n: usize) -> anyhow::Result<()> {
    for i in 0..n {
        let dir = root.join(format!("d{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::write(
            dir.join(format!("f{i}.txt")),
            format!("file {i}\nline two\nline three\n"),
        )?;
    }
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "initial"])
}

/// Changes `CHANGED` files of the tree for stage `stage`.
fn change(root: &Path, n: usize, stage: usize) -> anyhow::Result<()> {
    for k in 0..CHANGED {
        let i = (stage * 7919 + k * 104_729) % n;
        let path = root.join(format!("d{:04}/f{i}.txt", i / 100));
        std::fs::write(
            path,
            format!("file {i}\nchanged at stage {stage}\nline three\n"),
        )?;
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn measure(n: usize) -> anyhow::Result<(Duration, Duration)> {
    let dir = tempfile::tempdir()?;
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo)?;
    repository(&repo, n)?;
    let Discovery::Checkout(checkout) =
        Checkout::discover(&repo).map_err(|e| anyhow::anyhow!("{e}"))?
    else {
        anyhow::bail!("not a repository");
    };
    let run = RunBranch::start(
        &checkout,
        "weft/run/bench",
        &dir.path().join("run/worktree"),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let worktree = run.worktree.clone();
    let mut checkpointer = Checkpointer::new(run, MetadataBranch::new(&repo, "weft/meta/bench"));

    let mut weft = Vec::new();
    for stage in 0..STAGES {
        change(&worktree, n, stage)?;
        let checkpoint_json = format!("{{\"stage\":{stage}}}");
        let outcome_path = format!("stages/{stage:04}-stage@1/outcome.json");
        let started = Instant::now();
        let checkpoint = checkpointer
            .checkpoint(
                "checkpoint",
                &[
                    ("checkpoint.json", checkpoint_json.as_bytes()),
                    (&outcome_path, b"{\"status\":\"succeeded\"}"),
                ],
                |metadata_sha| {
                    stage_message(
                        "bench",
                        "stage",
                        "succeeded",
                        stage as u32 + 1,
                        Some(metadata_sha),
                    )
                },
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        weft.push(started.elapsed());
        anyhow::ensure!(
            checkpoint.stage.files.len() == CHANGED,
            "{} files",
            checkpoint.stage.files.len()
        );
    }

    // The git CLI on a second worktree of the same repository.
    let cli = dir.path().join("cli");
    git(
        &repo,
        &["worktree", "add", "-q", "-b", "cli", &cli.to_string_lossy()],
    )?;
    let mut git_cli = Vec::new();
    for stage in 0..STAGES {
        change(&cli, n, stage)?;
        let started = Instant::now();
        git(&cli, &["add", "-A"])?;
        git(&cli, &["commit", "-q", "-m", "stage"])?;
        let diff = Command::new("git")
            .arg("-C")
            .arg(&cli)
            .args(["diff", "HEAD^", "HEAD"])
            .output()?;
        anyhow::ensure!(diff.status.success() && !diff.stdout.is_empty(), "git diff");
        git_cli.push(started.elapsed());
    }
    let p50 = |mut v: Vec<Duration>| {
        v.sort();
        percentile(&v, 0.5)
    };
    Ok((p50(weft), p50(git_cli)))
}

/// The machine's load average (1, 5, 15 min): other builds share it, and a
/// figure means little without it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    println!("load average before: {}\n", load_average());
    let sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    println!(
        "| files in the repository | Weft checkpoint p50 (metadata + stage commit + patch) | git CLI (add -A, commit, diff) p50 |"
    );
    println!("|---|---|---|");
    for &n in sizes {
        let (weft, cli) = measure(n)?;
        println!("| {n} | {:.1} ms | {:.1} ms |", ms(weft), ms(cli));
    }
    println!("\n{CHANGED} files changed per stage, p50 of {STAGES} stages.");
    println!("load average after: {}", load_average());
    Ok(())
}
