//! Engine overhead per stage: a workflow of N sequential command nodes that
//! run `true`, against a plain loop of N `bash -c true` spawns. The
//! difference, divided by N, is what Weft adds per stage: routing, the
//! SQLite transaction, events, the run directory's files.
//!
//! `cargo bench -p weft --bench engine` prints a Markdown table (see
//! docs/performance.md). `--quick` runs 1,000 nodes only, once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use weft::engine::clock::Clock;
use weft::engine::interviewer::AutoApprove;
use weft::engine::{RunRequest, Services};
use weft::exec::cancel::Cancel;
use weft::model::RunStatus;
use weft::store::{Home, Store};

#[path = "support/mod.rs"]
mod support;
use support::peak_rss_kib;

fn chain(n: usize) -> String {
    let mut dot =
        String::from("digraph Bench {\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n");
    for i in 0..n {
        dot.push_str(&format!("  n{i} [shape=parallelogram, script=\"true\"]\n"));
    }
    dot.push_str("  start -> n0\n");
    for i in 1..n {
        dot.push_str(&format!("  n{} -> n{i}\n", i - 1));
    }
    dot.push_str(&format!("  n{} -> exit\n}}\n", n - 1));
    dot
}

/// One run of the N-node chain in a fresh home; wall time of the whole run.
/// The home is returned, not deleted: deleting thousands of files right
/// before the next run would slow its file creation (see
/// docs/performance.md) and measure the cleanup instead of the engine.
fn engine_run(n: usize, base: &Path) -> anyhow::Result<(Duration, tempfile::TempDir, f64)> {
    let dir = tempfile::tempdir_in(base)?;
    let path = dir.path().join("bench.fabro");
    std::fs::write(&path, chain(n))?;
    let home = Home::at(dir.path().join("home"));
    let store = Store::open(&home)?;
    // When each stage started, to compare the run's first and last stages.
    let starts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let sink = starts.clone();
    let services = Services {
        caller_env: None,
        home,
        store: Arc::new(Mutex::new(store)),
        interviewer: Arc::new(AutoApprove),
        clock: Clock::System,
        cancel: Cancel::new(),
        observer: Some(Arc::new(move |e: &weft::model::Event| {
            if e.kind.name() == "stage.started"
                && let Ok(mut starts) = sink.lock()
            {
                starts.push(Instant::now());
            }
        })),
        nesting: 0,
        agents: weft::engine::steering::RunningAgents::default(),
        budget: None,
    };
    let request = RunRequest {
        source: std::fs::read_to_string(&path)?,
        workflow_path: Some(path),
        seed: Some(1),
        work_dir: dir.path().to_path_buf(),
        ..RunRequest::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let conclusion = runtime.block_on(weft::engine::start(request, &services))?;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        conclusion.status == RunStatus::Succeeded && conclusion.stages.len() == n + 2,
        "the bench run did not succeed: {conclusion:?}"
    );
    let starts = starts.lock().map(|s| s.clone()).unwrap_or_default();
    Ok((elapsed, dir, late_over_early(&starts)))
}

/// The mean time per stage over the last tenth of the run divided by that
/// over the first tenth: 1.0 when a stage costs the same late in a run as
/// early, whatever else the machine is doing between runs.
fn late_over_early(starts: &[Instant]) -> f64 {
    let tenth = starts.len() / 10;
    if tenth < 2 {
        return 1.0;
    }
    let span = |s: &[Instant]| {
        s.last().zip(s.first()).map_or(0.0, |(b, a)| {
            b.duration_since(*a).as_secs_f64() / (s.len() - 1) as f64
        })
    };
    let early = span(&starts[..tenth]);
    let late = span(&starts[starts.len() - tenth..]);
    if early > 0.0 { late / early } else { 1.0 }
}

/// N plain spawns of `bash -c true`, output captured as the engine does.
fn spawn_loop(n: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for _ in 0..n {
        let out = std::process::Command::new("bash")
            .args(["-c", "true"])
            .output()?;
        anyhow::ensure!(out.status.success(), "bash -c true failed");
    }
    Ok(started.elapsed())
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Peak RSS growth of a child process running one engine run of N nodes.
fn rss_of_run(n: usize) -> anyhow::Result<u64> {
    let exe = std::env::current_exe()?;
    let out = std::process::Command::new(exe)
        .args(["--rss", &n.to_string()])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "rss child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--rss") {
        let n: usize = args.get(1).map_or(Ok(1000), |s| s.parse())?;
        let before = peak_rss_kib();
        let _ = engine_run(n, &std::env::temp_dir())?;
        println!("{}", peak_rss_kib().saturating_sub(before));
        return Ok(());
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (sizes, runs): (&[usize], usize) = if quick {
        (&[1000], 1)
    } else {
        (&[1000, 3000], 3)
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // The run directory's files cost what the file system charges for
    // creating them; measure on the temp dir's disk and, where there is
    // one, on a RAM file system, to tell the engine from the disk.
    let mut places: Vec<(&str, PathBuf)> = vec![("disk", std::env::temp_dir())];
    if Path::new("/dev/shm").is_dir() {
        places.push(("tmpfs", PathBuf::from("/dev/shm")));
    }
    println!(
        "| N | WEFT_HOME on | engine run | spawn loop | overhead per stage | last/first tenth per stage | engine peak RSS growth |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    let mut per_stage = Vec::new();
    let mut totals = Vec::new();
    let mut homes = Vec::new();
    for (place, base) in &places {
        for &n in sizes {
            // Warm up the page cache and bash once.
            let _ = spawn_loop(20)?;
            let mut engine = Vec::new();
            let mut spawns = Vec::new();
            let mut drift = Vec::new();
            for _ in 0..runs {
                // Alternate so that a burst of load hits both alike.
                let (time, home, ratio) = engine_run(n, base)?;
                engine.push(time);
                drift.push(ratio);
                homes.push(home);
                spawns.push(spawn_loop(n)?);
            }
            let (e, s) = (median(engine), median(spawns));
            let overhead = e.saturating_sub(s).as_secs_f64() * 1000.0 / n as f64;
            let rss = rss_of_run(n)?;
            drift.sort_by(f64::total_cmp);
            let drift = drift[drift.len() / 2];
            println!(
                "| {n} | {place} | {:.0} ms | {:.0} ms | {overhead:.3} ms | {drift:.2}× | {:.1} MB |",
                e.as_secs_f64() * 1000.0,
                s.as_secs_f64() * 1000.0,
                rss as f64 / 1024.0
            );
            per_stage.push((*place, n, overhead));
            totals.push((*place, n, e));
        }
    }
    println!();
    for (place, n, overhead) in &per_stage {
        if *n == 1000 {
            println!(
                "target: overhead per stage < 1 ms ({place}): {overhead:.3} ms: {}",
                if *overhead < 1.0 { "met" } else { "NOT met" }
            );
        }
    }
    for (place, _) in &places {
        let of = |size: usize| {
            totals
                .iter()
                .find(|(p, n, _)| p == place && *n == size)
                .map(|t| t.2)
        };
        if let (Some(one), Some(three)) = (of(1000), of(3000)) {
            let ratio = three.as_secs_f64() / one.as_secs_f64();
            println!(
                "target: 3000 nodes cost at most 3.3x 1000 nodes ({place}): {ratio:.2}x: {}",
                if ratio <= 3.3 { "met" } else { "NOT met" }
            );
        }
    }
    println!("load average before: {}", load.trim());
    std::io::stdout().flush()?;
    drop(homes);
    Ok(())
}
