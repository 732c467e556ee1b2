//! Parse and validation throughput on generated workflows, side by side with
//! Graphviz's own C parser (`gc`). Figures are recorded in
//! docs/performance.md.
//!
//! ```text
//! cargo bench -p weft --bench parse              # 1k, 10k and 100k nodes
//! cargo bench -p weft --bench parse -- --quick   # 1k and 10k, fewer runs
//! ```
//!
//! For profiling, `--emit N PATH` writes the N-node workflow and exits, and
//! `--repeat load PATH RUNS` (or `parse`) loads one file RUNS times and
//! prints the median (see docs/performance.md).
//!
//! A plain binary rather than criterion: one table of medians is all we need,
//! and it keeps the dependency tree lean. Memory is measured in a child
//! process (this binary re-executed with `--rss`), so the peak resident set
//! of one load is not blurred by earlier runs in the same process.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use weft::lang::{LoadOptions, Severity, Workflow, parser};

/// Issue 20's targets for parse + validate on this 2-core machine (issue
/// 13's were 50 and 500 ms).
const TARGETS_MS: [(usize, f64); 2] = [(10_000, 25.0), (100_000, 250.0)];

/// Issue 20's margin over Graphviz: parse + validate at least this many
/// times faster than `gc` − start-up.
const GC_FACTOR: f64 = 5.0;

/// The largest workflow text the bench loads. Users' files are capped at
/// 8 MiB (`weft::limits`), which the 100k-node workflow (30 MB) exceeds, so
/// the bench loads through `Workflow::from_bytes_up_to`.
const MAX_BENCH_BYTES: u64 = 64 * 1024 * 1024;

/// Loads a workflow of up to [`MAX_BENCH_BYTES`]. It keeps the bytes as its
/// source, as `Workflow::load` keeps the bytes it read.
fn load_workflow(bytes: Vec<u8>, base_dir: &Path) -> Workflow {
    Workflow::from_bytes_up_to(
        "bench.fabro",
        bytes,
        base_dir,
        &LoadOptions::default(),
        MAX_BENCH_BYTES,
    )
}

/// One size to measure: node count and how many timed runs each side gets.
struct Size {
    nodes: usize,
    weft_runs: usize,
    gc_runs: usize,
}

const FULL: [Size; 3] = [
    Size {
        nodes: 1_000,
        weft_runs: 51,
        gc_runs: 21,
    },
    Size {
        nodes: 10_000,
        weft_runs: 21,
        gc_runs: 11,
    },
    Size {
        nodes: 100_000,
        weft_runs: 7,
        gc_runs: 7,
    },
];

const QUICK: [Size; 2] = [
    Size {
        nodes: 1_000,
        weft_runs: 7,
        gc_runs: 5,
    },
    Size {
        nodes: 10_000,
        weft_runs: 3,
        gc_runs: 3,
    },
];

/// Runs the gc start-up measurement gets (an empty graph).
const GC_EMPTY_RUNS: usize = 21;

/// What each command node runs, with the class it carries.
const KINDS: [(&str, &str, &str); 4] = [
    ("Build", "ci build", "cargo build --release --locked"),
    ("Test", "ci test", "cargo test --workspace -- --nocapture"),
    (
        "Lint",
        "ci lint",
        "cargo clippy --all-targets -- -D warnings",
    ),
    ("Format", "ci fmt", "cargo fmt --all -- --check"),
];

/// Conditions on the success edges: a mix of the operators real workflows use.
const CONDITIONS: [&str; 4] = [
    "outcome=succeeded",
    "outcome=succeeded && context.tests_passed=true",
    "outcome!=failed",
    "outcome=succeeded || outcome=partially_succeeded",
];

/// A valid workflow with `n` command nodes between `start` and `exit`.
///
/// Every command node has a label, a class, `max_retries=2`, the command
/// shape and a script, and two outgoing edges: a conditional success edge to
/// the next node, and an unconditional fallback (the `all_conditional_edges`
/// rule rejects a node whose every edge is conditional). Even nodes fall back
/// by skipping ahead two nodes (a diamond), odd nodes by looping back one (a
/// retry loop). So edges = 2n + 1, half of them conditional, all weighted.
fn workflow(n: usize) -> String {
    let mut s = String::with_capacity(n * 320 + 256);
    let name = |i: usize| {
        if i < n {
            format!("n{i}")
        } else {
            "exit".to_string()
        }
    };
    // Writing to a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(s, "digraph Bench{n} {{");
    let _ = writeln!(
        s,
        "  graph [goal=\"Keep the workspace green\", label=\"Benchmark {n}\"]"
    );
    let _ = writeln!(s, "  rankdir=LR");
    let _ = writeln!(s, "  start [shape=Mdiamond, label=\"Start\"]");
    let _ = writeln!(s, "  exit  [shape=Msquare, label=\"Exit\"]");
    for i in 0..n {
        let (kind, class, script) = KINDS[i % KINDS.len()];
        let _ = writeln!(
            s,
            "  n{i} [label=\"{kind} step {i}\", class=\"{class}\", max_retries=2, shape=parallelogram, \
             script=\"{script} 2>&1 | tee logs/step-{i}.log\"]"
        );
    }
    let _ = writeln!(s, "  start -> n0 [weight=1]");
    for i in 0..n {
        let condition = CONDITIONS[i % CONDITIONS.len()];
        let weight = 2 + i % 3;
        let _ = writeln!(
            s,
            "  n{i} -> {} [label=\"pass\", condition=\"{condition}\", weight={weight}]",
            name(i + 1)
        );
        if i % 2 == 1 {
            let _ = writeln!(s, "  n{i} -> n{} [label=\"retry\", weight=1]", i - 1);
        } else {
            let _ = writeln!(s, "  n{i} -> {} [label=\"skip\", weight=1]", name(i + 2));
        }
    }
    s.push_str("}\n");
    s
}

/// The median, in milliseconds, of `runs` timed calls of `f` after one
/// untimed warm-up call. `f` returns the instant its measured work ended, so
/// dropping what it built stays outside the timing.
fn median_ms(runs: usize, mut f: impl FnMut() -> Result<Instant>) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let end = f()?;
        times.push(end.duration_since(start).as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().context("no runs")
}

fn parse_only(src: &str) -> Result<Instant> {
    let parsed = parser::parse(src).map_err(|d| anyhow::anyhow!("parse failed: {}", d.message))?;
    let end = Instant::now();
    drop(black_box(parsed));
    Ok(end)
}

/// Times a load from text in memory, the copy of the text included (the
/// loader owns its source; before it kept its own copy, so either way one
/// copy is timed).
fn load(bytes: &[u8], base_dir: &Path) -> Instant {
    let wf = load_workflow(bytes.to_vec(), base_dir);
    let end = Instant::now();
    drop(black_box(wf));
    end
}

/// Runs `gc` on `path`, discarding its output.
fn gc(path: &Path) -> Result<Instant> {
    let status = Command::new("gc")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running `gc` (Debian package `graphviz`)")?;
    let end = Instant::now();
    if !status.success() {
        bail!("gc failed on {}: {status}", path.display());
    }
    Ok(end)
}

/// `gc`'s own node and edge counts for `path`, as a cross-check of the file.
fn gc_counts(path: &Path) -> Result<(usize, usize)> {
    let out = Command::new("gc")
        .arg("-n")
        .arg("-e")
        .arg(path)
        .output()
        .context("running `gc`")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace().map(str::parse::<usize>);
    match (fields.next(), fields.next()) {
        (Some(Ok(n)), Some(Ok(e))) => Ok((n, e)),
        _ => bail!("unexpected gc output: {text}"),
    }
}

/// Peak RSS of `gc` on `path` in kB, via `/usr/bin/time -f %M` (Debian
/// package `time`); `None` when that tool is missing.
fn gc_peak_kb(path: &Path) -> Result<Option<u64>> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return Ok(None);
    }
    let out = Command::new(time)
        .args(["-f", "%M", "gc"])
        .arg(path)
        .stdout(Stdio::null())
        .output()
        .context("running `/usr/bin/time gc`")?;
    let text = String::from_utf8_lossy(&out.stderr);
    let kb = text.lines().last().and_then(|l| l.trim().parse().ok());
    kb.map(Some)
        .with_context(|| format!("unexpected /usr/bin/time output: {text}"))
}

/// This process's peak resident set (`VmHWM`) in kB.
fn vm_hwm_kb() -> Result<u64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/self/status")
}

/// The child side of the memory measurement: reads the file, then reports
/// how much the peak RSS grew while parsing (`parse`) or loading (`load`) it.
fn rss_child(mode: &str, path: &Path) -> Result<()> {
    let bytes = std::fs::read(path)?;
    let src = std::str::from_utf8(&bytes)?;
    let before = vm_hwm_kb()?;
    let after = match mode {
        "parse" => {
            let parsed =
                parser::parse(src).map_err(|d| anyhow::anyhow!("parse failed: {}", d.message))?;
            let after = vm_hwm_kb()?;
            drop(black_box(parsed));
            after
        }
        "load" => {
            let base = path.parent().unwrap_or(Path::new("."));
            // The file's bytes become the workflow's source, as in
            // `Workflow::load`: the growth is what loading adds to them.
            let wf = load_workflow(bytes, base);
            let after = vm_hwm_kb()?;
            drop(black_box(wf));
            after
        }
        other => bail!("unknown --rss mode {other}"),
    };
    println!("{} {}", after.saturating_sub(before), after);
    Ok(())
}

/// For profilers: parses (`parse`) or loads (`load`) one file `runs` times
/// and prints the median.
fn repeat(mode: &str, path: &Path, runs: usize) -> Result<()> {
    let bytes = std::fs::read(path)?;
    let src = std::str::from_utf8(&bytes)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let ms = match mode {
        "parse" => median_ms(runs, || parse_only(src))?,
        "load" => median_ms(runs, || Ok(load(&bytes, base)))?,
        other => bail!("unknown --repeat mode {other}"),
    };
    println!(
        "{mode} {}: median {ms:.2} ms over {runs} runs",
        path.display()
    );
    Ok(())
}

/// Runs this binary as an `--rss` child; returns (growth, peak) in kB.
fn weft_peak_kb(mode: &str, path: &Path) -> Result<(u64, u64)> {
    let exe = std::env::current_exe().context("locating the bench binary")?;
    let out = Command::new(exe)
        .args(["--rss", mode])
        .arg(path)
        .output()
        .context("running the --rss child")?;
    if !out.status.success() {
        bail!(
            "--rss child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(growth)), Some(Ok(peak))) => Ok((growth, peak)),
        _ => bail!("unexpected --rss output: {text}"),
    }
}

/// Everything measured for one size.
struct Row {
    /// Command nodes generated (the graph adds `start` and `exit`).
    n: usize,
    nodes: usize,
    edges: usize,
    bytes: usize,
    parse_ms: f64,
    load_ms: f64,
    gc_ms: f64,
    gc_net_ms: f64,
    weft_parse_kb: u64,
    weft_load_kb: u64,
    gc_kb: Option<u64>,
    gc_net_kb: Option<u64>,
}

fn measure(size: &Size, dir: &Path, gc_empty_ms: f64, gc_empty_kb: Option<u64>) -> Result<Row> {
    let n = size.nodes;
    let src = workflow(n);
    let path: PathBuf = dir.join(format!("bench-{n}.fabro"));
    std::fs::write(&path, &src)?;

    // The generated workflow must be one a user could run: no errors.
    let wf = load_workflow(src.as_bytes().to_vec(), dir);
    let graph = wf
        .graph
        .as_ref()
        .context("the generated workflow did not parse")?;
    let (nodes, edges) = (graph.nodes.len(), graph.edges.len());
    let errors: Vec<_> = wf
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if let Some(first) = errors.first() {
        bail!(
            "generated {n}-node workflow has {} errors, first: {}: {}",
            errors.len(),
            first.rule,
            first.message
        );
    }
    let warnings = wf.diagnostics.len();
    if warnings > 0 {
        let first = &wf.diagnostics[0];
        eprintln!(
            "note: {n} nodes: {warnings} non-error diagnostics, first: {}: {}",
            first.rule, first.message
        );
    }
    let (gc_nodes, gc_edges) = gc_counts(&path)?;
    if (gc_nodes, gc_edges) != (nodes, edges) {
        bail!("gc counts {gc_nodes} nodes / {gc_edges} edges, weft {nodes} / {edges}");
    }
    drop(wf);

    eprintln!("measuring {n} nodes ...");
    let parse_ms = median_ms(size.weft_runs, || parse_only(&src))?;
    let load_ms = median_ms(size.weft_runs, || Ok(load(src.as_bytes(), dir)))?;
    let gc_ms = median_ms(size.gc_runs, || gc(&path))?;
    let (weft_parse_kb, _) = weft_peak_kb("parse", &path)?;
    let (weft_load_kb, _) = weft_peak_kb("load", &path)?;
    let gc_kb = gc_peak_kb(&path)?;
    Ok(Row {
        n,
        nodes,
        edges,
        bytes: src.len(),
        parse_ms,
        load_ms,
        gc_ms,
        gc_net_ms: gc_ms - gc_empty_ms,
        weft_parse_kb,
        weft_load_kb,
        gc_kb,
        gc_net_kb: gc_kb.zip(gc_empty_kb).map(|(a, b)| a.saturating_sub(b)),
    })
}

fn mb(kb: u64) -> String {
    format!("{:.1}", kb as f64 / 1024.0)
}

fn print_report(rows: &[Row], gc_empty_ms: f64, gc_empty_kb: Option<u64>) {
    println!();
    println!(
        "| N | nodes | edges | file | weft parse | weft parse+validate | gc | gc − start-up | \
         weft RSS parse | weft RSS parse+validate | gc RSS | gc RSS − start-up |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {:.1} MB | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {} MB | {} MB | {} | {} |",
            r.n,
            r.nodes,
            r.edges,
            r.bytes as f64 / 1e6,
            r.parse_ms,
            r.load_ms,
            r.gc_ms,
            r.gc_net_ms,
            mb(r.weft_parse_kb),
            mb(r.weft_load_kb),
            r.gc_kb.map_or("n/a".into(), |kb| format!("{} MB", mb(kb))),
            r.gc_net_kb
                .map_or("n/a".into(), |kb| format!("{} MB", mb(kb))),
        );
    }
    println!();
    println!(
        "gc start-up (empty graph): {gc_empty_ms:.2} ms, {}. Times are medians. weft RSS: growth of \
         a child process's peak RSS across one call (the file is read before). gc RSS: peak RSS of \
         the whole `gc` process, then minus the empty-graph peak.",
        gc_empty_kb.map_or("RSS n/a".into(), |kb| format!("{} MB RSS", mb(kb)))
    );
    println!();
    println!("| target | measured | met |");
    println!("|---|---:|:-:|");
    for (nodes, limit) in TARGETS_MS {
        if let Some(r) = rows.iter().find(|r| r.n == nodes) {
            let met = if r.load_ms < limit { "yes" } else { "no" };
            println!(
                "| {nodes} nodes parse+validate < {limit} ms | {:.2} ms | {met} |",
                r.load_ms
            );
        }
    }
    for r in rows {
        let met = |ours: f64| if ours < r.gc_net_ms { "yes" } else { "no" };
        println!(
            "| {} nodes parse faster than gc − start-up ({:.2} ms) | {:.2} ms | {} |",
            r.n,
            r.gc_net_ms,
            r.parse_ms,
            met(r.parse_ms)
        );
        println!(
            "| {} nodes parse+validate faster than gc − start-up | {:.2} ms | {} |",
            r.n,
            r.load_ms,
            met(r.load_ms)
        );
        let factor = r.gc_net_ms / r.load_ms;
        println!(
            "| {} nodes parse+validate ≥ {GC_FACTOR}× faster than gc − start-up | {factor:.1}× | {} |",
            r.n,
            if factor >= GC_FACTOR { "yes" } else { "no" }
        );
    }
    println!();
    let per_node: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} nodes: {:.0} B/node",
                r.n,
                r.weft_load_kb as f64 * 1024.0 / r.nodes as f64
            )
        })
        .collect();
    println!(
        "weft parse+validate peak RSS growth per node: {}",
        per_node.join(", ")
    );
    let per_byte: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} nodes: {:.1}× file size",
                r.n,
                r.weft_load_kb as f64 * 1024.0 / r.bytes as f64
            )
        })
        .collect();
    println!(
        "weft parse+validate peak RSS growth / file size: {}",
        per_byte.join(", ")
    );
}

/// `/proc/loadavg`'s first three fields: other work on the machine skews
/// the timings, so the report says how busy it was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "n/a".to_string(),
        |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--rss") {
        let mode = args
            .get(at + 1)
            .context("--rss needs a mode (parse or load)")?;
        let path = args.get(at + 2).context("--rss needs a workflow path")?;
        return rss_child(mode, Path::new(path));
    }
    if let Some(at) = args.iter().position(|a| a == "--emit") {
        let n = args
            .get(at + 1)
            .and_then(|n| n.parse().ok())
            .context("--emit needs a node count")?;
        let path = args.get(at + 2).context("--emit needs an output path")?;
        return std::fs::write(path, workflow(n)).with_context(|| format!("writing {path}"));
    }
    if let Some(at) = args.iter().position(|a| a == "--repeat") {
        let mode = args
            .get(at + 1)
            .context("--repeat needs a mode (parse or load)")?;
        let path = args.get(at + 2).context("--repeat needs a workflow path")?;
        let runs = args
            .get(at + 3)
            .and_then(|n| n.parse().ok())
            .context("--repeat needs a run count")?;
        return repeat(mode, Path::new(path), runs);
    }
    // cargo bench passes `--bench`; anything else we do not know is ignored
    // the same way, so `cargo bench` filters do not break the run.
    let sizes: &[Size] = if args.iter().any(|a| a == "--quick") {
        &QUICK
    } else {
        &FULL
    };

    let load_before = load_average();
    let dir = tempfile::tempdir()?;
    let empty = dir.path().join("empty.gv");
    std::fs::write(&empty, "digraph G {}\n")?;
    let gc_empty_ms = median_ms(GC_EMPTY_RUNS, || gc(&empty))?;
    let gc_empty_kb = gc_peak_kb(&empty)?;

    let mut rows = Vec::new();
    for size in sizes {
        rows.push(measure(size, dir.path(), gc_empty_ms, gc_empty_kb)?);
    }
    print_report(&rows, gc_empty_ms, gc_empty_kb);
    println!(
        "load average (1, 5, 15 min): {load_before} before, {} after",
        load_average()
    );
    Ok(())
}
