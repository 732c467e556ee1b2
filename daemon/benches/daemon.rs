//! The daemon's speed: round-trip latency of `daemon.status`, events
//! delivered to a subscriber during a run of 1,000 fast command stages (and
//! whether the subscriber falls behind), and the idle daemon's memory.
//!
//! Then the daemon under load: ten runs of 500 command stages at once
//! (`max_concurrent_runs = 10`), followed by the app's subscription to
//! every run and two CLI-like followers of one run each, while a reader
//! polls the database as the app's history does: the lag of every event at
//! each subscriber, whether each saw its runs' events in order, whether any
//! read met `SQLITE_BUSY`, and the daemon's peak RSS.
//!
//! `cargo bench -p weft --bench daemon` (`--quick`: smaller runs; `--load`:
//! the load part only). The daemon runs in a child process (this binary
//! re-executed with `--serve HOME`), so its memory is its own.

use std::time::{Duration, Instant, SystemTime};

use weft::ipc::client::Client;
use weft::ipc::protocol::{DaemonStatus, DaemonStop, RunStart, WorkflowSource};
use weft::model::EventKind;
use weft::store::Home;

#[path = "support/mod.rs"]
mod support;
use support::percentile;

fn chain(n: usize) -> String {
    let mut dot = String::from("digraph Bench { start [shape=Mdiamond]; exit [shape=Msquare]\n");
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

/// A field of `/proc/PID/status` in kB (`VmRSS`, `VmHWM`); 0 where /proc
/// does not say.
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next().map(str::to_string))
        })
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}

fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS")
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") {
        let home = Home::at(args.get(1).map_or("", String::as_str));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, weft::server::serve(home))?;
        return Ok(());
    }
    let quick = args.iter().any(|a| a == "--quick");
    if args.iter().any(|a| a == "--load") {
        return under_load(quick);
    }
    let stages = if quick { 200 } else { 1000 };
    let dir = tempfile::tempdir()?;
    let home = Home::at(dir.path().join("home"));
    let mut daemon = std::process::Command::new(std::env::current_exe()?)
        .args(["--serve", &home.root().display().to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            match Client::connect(&home).await {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => {
                    anyhow::bail!("the daemon did not start: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        // Idle memory, after a moment to settle.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let idle_rss = rss_kb(daemon.id());

        // Round trips.
        for _ in 0..100 {
            client.call(DaemonStatus {}).await?;
        }
        let mut trips = Vec::new();
        for _ in 0..2000 {
            let t = Instant::now();
            client.call(DaemonStatus {}).await?;
            trips.push(t.elapsed());
        }
        trips.sort();

        // A run of fast stages, followed live.
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work)?;
        let mut params = RunStart::new(WorkflowSource::Source(chain(stages)), &work);
        params.seed = Some(1);
        let started = Instant::now();
        let run = client.call(params).await?;
        let mut sub = client
            .subscribe("bench", Some(run.run_id.clone()), 0)
            .await?;
        let mut lags = Vec::new();
        let mut count = 0u64;
        while let Some(event) = sub.next().await {
            count += 1;
            if let Ok(ts) = humantime::parse_rfc3339(&event.ts)
                && let Ok(lag) = SystemTime::now().duration_since(ts)
            {
                lags.push(lag);
            }
            if matches!(
                event.kind,
                EventKind::RunCompleted { .. } | EventKind::RunFailed { .. }
            ) {
                break;
            }
        }
        let elapsed = started.elapsed();
        let busy_rss = rss_kb(daemon.id());
        let tenth = (lags.len() / 10).max(1);
        let mean = |xs: &[Duration]| {
            xs.iter().sum::<Duration>() / u32::try_from(xs.len().max(1)).unwrap_or(1)
        };
        let early = mean(&lags[..tenth]);
        let late = mean(&lags[lags.len() - tenth..]);
        let _ = client.call(DaemonStop {}).await;
        Ok((idle_rss, trips, count, elapsed, early, late, busy_rss))
    });
    let _ = daemon.wait();
    let (idle_rss, trips, count, elapsed, early, late, busy_rss) = result?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("| measure | value |");
    println!("|---|---:|");
    println!(
        "| daemon.status round trip p50 | {:.3} ms |",
        percentile(&trips, 0.5).as_secs_f64() * 1000.0
    );
    println!(
        "| daemon.status round trip p99 | {:.3} ms |",
        percentile(&trips, 0.99).as_secs_f64() * 1000.0
    );
    println!(
        "| events delivered during a {stages}-stage run | {count} in {:.2} s ({:.0}/s) |",
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64()
    );
    println!(
        "| subscriber lag, first tenth of the run | {:.2} ms |",
        early.as_secs_f64() * 1000.0
    );
    println!(
        "| subscriber lag, last tenth of the run | {:.2} ms |",
        late.as_secs_f64() * 1000.0
    );
    println!("| idle daemon RSS | {:.1} MB |", idle_rss as f64 / 1024.0);
    println!(
        "| daemon RSS after the run | {:.1} MB |",
        busy_rss as f64 / 1024.0
    );
    println!();
    let p50 = percentile(&trips, 0.5);
    println!(
        "target: p50 round trip < 1 ms: {}",
        if p50 < Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        }
    );
    println!(
        "target: idle RSS < 20 MB: {}",
        if idle_rss < 20 * 1024 {
            "met"
        } else {
            "NOT met"
        }
    );
    println!(
        "target: the subscriber keeps up (lag does not grow): {}",
        if late <= early * 3 + Duration::from_millis(5) {
            "met"
        } else {
            "NOT met"
        }
    );
    println!("load average: {}", load.trim());
    println!();
    under_load(quick)
}

/// The daemon's peak resident set (`VmHWM`) in KiB.
fn peak_kb(pid: u32) -> u64 {
    status_kb(pid, "VmHWM")
}

/// What one subscriber saw: each event's lag, and whether every run's
/// events came in order.
#[derive(Default)]
struct Seen {
    lags: Vec<Duration>,
    in_order: bool,
    events: u64,
}

/// Follows `sub` until `runs` runs have ended, noting each event's lag and
/// checking that each run's sequence numbers only grow, by one.
async fn follow(mut sub: weft::ipc::client::Subscription, runs: usize) -> Seen {
    let mut last: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    let mut seen = Seen {
        in_order: true,
        ..Seen::default()
    };
    let mut ended = 0;
    while let Some(event) = sub.next().await {
        seen.events += 1;
        if let Ok(ts) = humantime::parse_rfc3339(&event.ts)
            && let Ok(lag) = SystemTime::now().duration_since(ts)
        {
            seen.lags.push(lag);
        }
        let before = last.insert(event.run_id.clone(), event.seq);
        if before.is_some_and(|b| event.seq != b + 1) {
            seen.in_order = false;
        }
        if matches!(
            event.kind,
            EventKind::RunCompleted { .. } | EventKind::RunFailed { .. }
        ) {
            ended += 1;
            if ended == runs {
                break;
            }
        }
    }
    seen
}

fn under_load(quick: bool) -> anyhow::Result<()> {
    const RUNS: usize = 10;
    let stages = if quick { 100 } else { 500 };
    let dir = tempfile::tempdir()?;
    let home = Home::at(dir.path().join("home"));
    std::fs::create_dir_all(home.root())?;
    std::fs::write(
        home.settings_path(),
        format!("max_concurrent_runs = {RUNS}\n"),
    )?;
    let mut daemon = std::process::Command::new(std::env::current_exe()?)
        .args(["--serve", &home.root().display().to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let daemon_pid = daemon.id();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let result = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            match Client::connect(&home).await {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => {
                    anyhow::bail!("the daemon did not start: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work)?;
        // The app: one subscription to every run, from before they start.
        let app = Client::connect(&home).await?;
        let app_sub = app.subscribe("app", None, 0).await?;
        let started = Instant::now();
        let mut run_ids = Vec::new();
        for i in 0..RUNS {
            let mut params = RunStart::new(WorkflowSource::Source(chain(stages)), &work);
            params.seed = Some(i as u64);
            run_ids.push(client.call(params).await?.run_id);
        }
        // Two CLI followers, one run each, from its first event.
        let mut followers = Vec::new();
        for (i, run) in run_ids.iter().take(2).enumerate() {
            let cli = Client::connect(&home).await?;
            let sub = cli
                .subscribe(format!("cli-{i}"), Some(run.clone()), 0)
                .await?;
            followers.push((cli, sub));
        }
        // The app's history reads, on a thread of their own.
        let reader_home = home.clone();
        let keep_reading = reading.clone();
        let first_run = run_ids[0].clone();
        let reader = std::thread::spawn(move || {
            let (mut reads, mut busy) = (0u64, 0u64);
            while keep_reading.load(std::sync::atomic::Ordering::Relaxed) {
                match weft::store::Store::open_read_only(&reader_home).and_then(|s| {
                    s.list_runs(&weft::store::RunFilter::default())?;
                    s.events(&first_run, 0, Some(500))
                }) {
                    Ok(_) => reads += 1,
                    Err(e) => {
                        if e.to_string().to_lowercase().contains("busy")
                            || e.to_string().contains("locked")
                        {
                            busy += 1;
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            (reads, busy)
        });
        let mut rss_peak_sampled = 0;
        let app_seen = {
            let app_follow = follow(app_sub, RUNS);
            let cli_follows = futures_join(followers);
            let sampler = async {
                loop {
                    rss_peak_sampled = rss_peak_sampled.max(rss_kb(daemon_pid));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            };
            tokio::select! {
                seen = async { tokio::join!(app_follow, cli_follows) } => seen,
                () = sampler => unreachable!("the sampler never ends"),
            }
        };
        let elapsed = started.elapsed();
        reading.store(false, std::sync::atomic::Ordering::Relaxed);
        let (reads, busy) = reader
            .join()
            .map_err(|_| anyhow::anyhow!("reader panicked"))?;
        let peak = peak_kb(daemon_pid);
        let _ = client.call(DaemonStop {}).await;
        Ok((app_seen, elapsed, reads, busy, peak))
    });
    let _ = daemon.wait();
    let ((app, clis), elapsed, reads, busy, peak) = result?;
    let mut lags: Vec<Duration> = app.lags.clone();
    for cli in &clis {
        lags.extend(cli.lags.iter().copied());
    }
    lags.sort();
    let in_order = app.in_order && clis.iter().all(|c| c.in_order);
    let p50 = percentile(&lags, 0.5);
    let p99 = percentile(&lags, 0.99);
    println!(
        "Under load: {RUNS} runs of {stages} command stages at once, the app subscribed to all, two followers of one run each"
    );
    println!();
    println!("| measure | value |");
    println!("|---|---:|");
    println!("| all runs ended in | {:.1} s |", elapsed.as_secs_f64());
    println!(
        "| events delivered (app + followers) | {} + {} |",
        app.events,
        clis.iter().map(|c| c.events).sum::<u64>()
    );
    println!("| event lag p50 | {:.2} ms |", p50.as_secs_f64() * 1000.0);
    println!("| event lag p99 | {:.2} ms |", p99.as_secs_f64() * 1000.0);
    println!(
        "| every subscriber saw each run's events in order | {} |",
        if in_order { "yes" } else { "NO" }
    );
    println!("| database reads during the runs (SQLITE_BUSY) | {reads} ({busy}) |");
    println!("| weftd peak RSS | {:.1} MB |", peak as f64 / 1024.0);
    println!();
    println!(
        "target: p99 lag < 50 ms: {}",
        if p99 < Duration::from_millis(50) {
            "met"
        } else {
            "NOT met"
        }
    );
    println!(
        "target: no SQLITE_BUSY for readers: {}",
        if busy == 0 { "met" } else { "NOT met" }
    );
    println!(
        "target: weftd RSS < 50 MB: {}",
        if peak < 50 * 1024 { "met" } else { "NOT met" }
    );
    println!(
        "load average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}

/// Follows each (client, subscription) pair to its run's end, together.
async fn futures_join(followers: Vec<(Client, weft::ipc::client::Subscription)>) -> Vec<Seen> {
    let (clients, subs): (Vec<Client>, Vec<_>) = followers.into_iter().unzip();
    let seen = futures_util::future::join_all(subs.into_iter().map(|sub| follow(sub, 1))).await;
    drop(clients);
    seen
}
