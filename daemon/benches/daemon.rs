//! The daemon's speed: round-trip latency of `daemon.status`, events
//! delivered to a subscriber during a run of 1,000 fast command stages (and
//! whether the subscriber falls behind), and the idle daemon's memory.
//!
//! `cargo bench -p weft --bench daemon`. The daemon runs in a child process
//! (this binary re-executed with `--serve HOME`), so its memory is its own.

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

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
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
    Ok(())
}
