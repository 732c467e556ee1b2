//! Engine overhead per stage: a workflow of N sequential command nodes that
//! run `true`, against a plain loop of N `bash -c true` spawns. The
//! difference, divided by N, is what Weft adds per stage: routing, the
//! SQLite transaction, events, the run directory's files.
//!
//! Two ways: in-process (the engine called directly) and through the daemon
//! (`weft run` against a weftd, what users do), each with `WEFT_HOME` on the
//! temp dir's disk and on a RAM file system, at 1,000 stages (three runs)
//! and 10,000 (one). A Python loop creating the same directory and files
//! per stage gives the file system's floor on each.
//!
//! `cargo bench -p weft --bench engine` prints a Markdown table (see
//! docs/performance.md). `--quick` runs 1,000 nodes only, once;
//! `--in-process` or `--daemon` one way only; `--weft PATH` runs the daemon
//! rows with another build (its `weftd` beside it), for before/after;
//! `--scud PATH` adds scud-cli's rows (`make bench-peers`), each over its
//! own shell's spawn loop (`sh`, where Weft's is `bash`). The CPU column is
//! the runner's own CPU time per stage (the engine's process, or weftd),
//! which a busy machine disturbs far less than wall time.

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

/// The chain in Fabro's dialect (`script`), or in the Attractor spec's
/// (`tool_command`) for scud-cli.
fn chain_with(n: usize, command_attr: &str) -> String {
    let mut dot =
        String::from("digraph Bench {\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n");
    for i in 0..n {
        dot.push_str(&format!(
            "  n{i} [shape=parallelogram, {command_attr}=\"true\"]\n"
        ));
    }
    dot.push_str("  start -> n0\n");
    for i in 1..n {
        dot.push_str(&format!("  n{} -> n{i}\n", i - 1));
    }
    dot.push_str(&format!("  n{} -> exit\n}}\n", n - 1));
    dot
}

fn chain(n: usize) -> String {
    chain_with(n, "script")
}

/// One run of the N-node chain by scud-cli (`scud attractor run`,
/// headless, its run directory on `base`); the wall time of the command.
/// Its exit status is not trusted alone: the bench checks that it ran
/// every stage, by the stage folders it wrote.
fn scud_run(n: usize, base: &Path, scud: &Path) -> anyhow::Result<(Duration, tempfile::TempDir)> {
    let dir = tempfile::tempdir_in(base)?;
    let file = dir.path().join("bench.dot");
    std::fs::write(&file, chain_with(n, "tool_command"))?;
    let runs = dir.path().join("runs");
    let started = Instant::now();
    let out = std::process::Command::new(scud)
        .args([
            "attractor",
            "run",
            "--headless",
            "--simulated",
            "--runs-dir",
        ])
        .arg(&runs)
        .arg(&file)
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .stdin(std::process::Stdio::null())
        .output()?;
    let elapsed = started.elapsed();
    anyhow::ensure!(
        out.status.success(),
        "scud attractor run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = count_named(&runs, &format!("n{}", n - 1));
    anyhow::ensure!(ran == 1, "scud-cli did not reach the chain's last stage");
    Ok((elapsed, dir))
}

/// How many entries named `name` are under `dir`, a few levels deep.
fn count_named(dir: &Path, name: &str) -> usize {
    let mut found = 0;
    let mut queue = vec![(dir.to_path_buf(), 0)];
    while let Some((dir, depth)) = queue.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name() == name {
                found += 1;
            } else if depth < 3 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push((entry.path(), depth + 1));
            }
        }
    }
    found
}

/// One run of the N-node chain in a fresh home; wall time of the whole run.
/// The home is returned, not deleted: deleting thousands of files right
/// before the next run would slow its file creation (see
/// docs/performance.md) and measure the cleanup instead of the engine.
fn engine_run(
    n: usize,
    base: &Path,
) -> anyhow::Result<(Duration, tempfile::TempDir, f64, Duration)> {
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
        sandbox: None,
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
    let cpu = cpu_time("self")?;
    let started = Instant::now();
    let conclusion = runtime.block_on(weft::engine::start(request, &services))?;
    let elapsed = started.elapsed();
    let cpu = cpu_time("self")?.saturating_sub(cpu);
    anyhow::ensure!(
        conclusion.status == RunStatus::Succeeded && conclusion.stages.len() == n + 2,
        "the bench run did not succeed: {conclusion:?}"
    );
    let starts = starts.lock().map(|s| s.clone()).unwrap_or_default();
    Ok((elapsed, dir, late_over_early(&starts), cpu))
}

/// The CPU time (user + system) a process has used so far, from
/// `/proc/PID/stat`: steadier than wall time on a busy machine, as other
/// processes' work does not count, and it leaves out the children (the
/// stages' shells), so it is the runner's own cost.
fn cpu_time(pid: &str) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name, which may hold spaces, ends with ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow::anyhow!("unreadable /proc/{pid}/stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5), 12 and 13 here,
    // in USER_HZ ticks, which Linux fixes at 100 per second for /proc.
    let ticks = |i: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("short /proc/{pid}/stat"))?
            .parse()?)
    };
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
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

/// N plain spawns of `SHELL -c true`, output captured as the engine does.
fn spawn_loop(shell: &str, n: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    for _ in 0..n {
        let out = std::process::Command::new(shell)
            .args(["-c", "true"])
            .output()?;
        anyhow::ensure!(out.status.success(), "{shell} -c true failed");
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

/// One run of the N-node chain through weftd, as users run it: a daemon
/// on a fresh home (started before the clock starts), then `weft run`
/// following the run to its end. Returns the wall time of `weft run` and
/// the CPU time weftd used meanwhile.
fn daemon_run(
    n: usize,
    base: &Path,
    weft: &Path,
) -> anyhow::Result<(Duration, tempfile::TempDir, Duration)> {
    let dir = tempfile::tempdir_in(base)?;
    std::fs::write(dir.path().join("bench.fabro"), chain(n))?;
    let home = dir.path().join("home");
    let weft_cmd = || {
        let mut c = std::process::Command::new(weft);
        c.env("WEFT_HOME", &home)
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null());
        c
    };
    let started_daemon = weft_cmd().args(["daemon", "start"]).output()?;
    anyhow::ensure!(
        started_daemon.status.success(),
        "weft daemon start failed: {}",
        String::from_utf8_lossy(&started_daemon.stderr)
    );
    let pid = std::fs::read_to_string(home.join("run").join("weftd.pid"))?;
    let pid = pid.trim();
    let cpu = cpu_time(pid)?;
    let started = Instant::now();
    let out = weft_cmd().args(["run", "bench.fabro"]).output()?;
    let elapsed = started.elapsed();
    let cpu = cpu_time(pid)?.saturating_sub(cpu);
    let _ = weft_cmd().args(["daemon", "stop"]).output();
    anyhow::ensure!(
        out.status.success(),
        "weft run through the daemon failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((elapsed, dir, cpu))
}

/// What the file system alone charges for a stage's run directory entries
/// (a directory and five small files), created by a plain Python loop in a
/// fresh directory on `base`: the floor no runner that writes the
/// reference's run directory goes below. Milliseconds per stage.
fn python_floor(n: usize, base: &Path) -> anyhow::Result<(f64, tempfile::TempDir)> {
    let dir = tempfile::tempdir_in(base)?;
    let script = r#"
import os, sys, time
root, n = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
for i in range(n):
    d = os.path.join(root, 'n%d' % i)
    os.mkdir(d)
    for f in ('status.json', 'stdout.log', 'stderr.log', 'script_invocation.json', 'script_timing.json'):
        with open(os.path.join(d, f), 'w') as h:
            h.write('{}')
print((time.perf_counter() - t) * 1000 / n)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, &dir.path().to_string_lossy(), &n.to_string()])
        .output()?;
    anyhow::ensure!(out.status.success(), "python3 failed");
    Ok((String::from_utf8_lossy(&out.stdout).trim().parse()?, dir))
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
    // `--weft PATH` measures the daemon rows with another build's `weft`
    // (its `weftd` beside it), to compare two versions side by side.
    let weft = args
        .iter()
        .position(|a| a == "--weft")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_weft")), PathBuf::from);
    // Runs start in their own directories: a relative path would not hold.
    let weft = std::fs::canonicalize(&weft)?;
    let in_process_only = args.iter().any(|a| a == "--in-process");
    let daemon_only = args.iter().any(|a| a == "--daemon");
    // Three runs at 1,000 stages (medians), one at 10,000.
    let sizes: &[(usize, usize)] = if quick {
        &[(1000, 1)]
    } else {
        &[(1000, 3), (10_000, 1)]
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // The run directory's files cost what the file system charges for
    // creating them; measure on the temp dir's disk and, where there is
    // one, on a RAM file system, to tell the engine from the disk.
    let mut places: Vec<(&str, PathBuf)> = vec![("disk", std::env::temp_dir())];
    if Path::new("/dev/shm").is_dir() {
        places.push(("tmpfs", PathBuf::from("/dev/shm")));
    }
    let mut modes = Vec::new();
    if !daemon_only {
        modes.push("in-process");
    }
    if !in_process_only {
        modes.push("weft run (daemon)");
    }
    // `--scud PATH`: scud-cli's `scud` (see `make bench-peers`), the
    // like-for-like Rust Attractor runner, on the same chain in its dialect,
    // alternating with Weft's runs.
    let scud = args
        .iter()
        .position(|a| a == "--scud")
        .and_then(|i| args.get(i + 1))
        .map(std::fs::canonicalize)
        .transpose()?;
    if scud.is_some() {
        modes.push("scud-cli");
    }
    println!(
        "| N | WEFT_HOME on | how | run | spawn loop | overhead per stage | runner CPU per stage | last/first tenth per stage | engine peak RSS growth |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|");
    let mut per_stage = Vec::new();
    let mut homes = Vec::new();
    for (place, base) in &places {
        for &(n, runs) in sizes {
            for how in &modes {
                // scud-cli runs its tool commands with `sh`, Weft with
                // `bash`: each is measured over its own shell's spawns.
                let shell = if *how == "scud-cli" { "sh" } else { "bash" };
                // Warm up the page cache and the shell once.
                let _ = spawn_loop(shell, 20)?;
                let mut times = Vec::new();
                let mut spawns = Vec::new();
                let mut drift = Vec::new();
                let mut cpus = Vec::new();
                for _ in 0..runs {
                    // Alternate so that a burst of load hits both alike.
                    match (*how, &scud) {
                        ("in-process", _) => {
                            let (time, home, ratio, cpu) = engine_run(n, base)?;
                            times.push(time);
                            drift.push(ratio);
                            cpus.push(cpu);
                            homes.push(home);
                        }
                        ("scud-cli", Some(scud)) => {
                            let (time, home) = scud_run(n, base, scud)?;
                            times.push(time);
                            homes.push(home);
                        }
                        _ => {
                            let (time, home, cpu) = daemon_run(n, base, &weft)?;
                            times.push(time);
                            cpus.push(cpu);
                            homes.push(home);
                        }
                    }
                    spawns.push(spawn_loop(shell, n)?);
                }
                let cpu = if cpus.is_empty() {
                    String::new()
                } else {
                    format!("{:.3} ms", median(cpus).as_secs_f64() * 1000.0 / n as f64)
                };
                let (t, s) = (median(times), median(spawns));
                let overhead = t.saturating_sub(s).as_secs_f64() * 1000.0 / n as f64;
                let (drift, rss) = if *how == "in-process" {
                    drift.sort_by(f64::total_cmp);
                    (
                        format!("{:.2}×", drift[drift.len() / 2]),
                        format!("{:.1} MB", rss_of_run(n)? as f64 / 1024.0),
                    )
                } else {
                    ("".into(), "".into())
                };
                println!(
                    "| {n} | {place} | {how} | {:.0} ms | {:.0} ms | {overhead:.3} ms | {cpu} | {drift} | {rss} |",
                    t.as_secs_f64() * 1000.0,
                    s.as_secs_f64() * 1000.0,
                );
                per_stage.push((*place, *how, n, overhead, t));
            }
        }
    }
    println!();
    for (place, base) in &places {
        let (floor, dir) = python_floor(1000, base)?;
        homes.push(dir);
        println!(
            "reference ({place}): a Python loop creating a directory and 5 files per stage: {floor:.3} ms per stage"
        );
    }
    for (place, how, n, overhead, _) in per_stage.iter().filter(|r| r.1 != "scud-cli") {
        println!(
            "target: overhead per stage < 1 ms ({place}, {how}, {n} stages): {overhead:.3} ms: {}",
            if *overhead < 1.0 { "met" } else { "NOT met" }
        );
    }
    let row = |place: &str, how: &str, n: usize| {
        per_stage
            .iter()
            .find(|r| r.0 == place && r.1 == how && r.2 == n)
            .map(|r| r.4)
    };
    for (place, _) in &places {
        for &(n, _) in sizes {
            let (Some(weft), Some(scud)) = (
                row(place, "weft run (daemon)", n),
                row(place, "scud-cli", n),
            ) else {
                continue;
            };
            println!(
                "target: a {n}-stage run through weft run faster than scud-cli's ({place}): {:.0} ms against {:.0} ms: {}",
                weft.as_secs_f64() * 1000.0,
                scud.as_secs_f64() * 1000.0,
                if weft < scud { "met" } else { "NOT met" }
            );
        }
    }
    println!("load average before: {}", load.trim());
    println!(
        "load average after: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    std::io::stdout().flush()?;
    drop(homes);
    Ok(())
}
