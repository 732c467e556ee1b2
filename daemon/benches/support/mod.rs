//! What the benchmarks share: percentiles of timings and this process's
//! peak resident set. Each bench binary includes this file with
//! `#[path = "support/mod.rs"] mod support;` (a file in a folder is not
//! taken for a bench of its own), and may use only part of it.
#![allow(dead_code)]

use std::time::Duration;

/// The `p` quantile (0.0 to 1.0) of `sorted`, nearest rank; `sorted` must
/// not be empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// This process's peak resident set (`VmHWM` of /proc/self/status) in KiB;
/// 0 where /proc does not say.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
