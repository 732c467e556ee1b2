//! The desktop app's history queries on a large home (issue 7): a database
//! of 10,000 runs and 1,000,000 events, read through `weft::views`
//! exactly as the app's history commands do.
//!
//! `cargo bench -p weft --bench app` (`-- --rebuild` regenerates the
//! database, `-- --reps N` sets the warm repetitions, default 20).
//!
//! The database is generated once with the real store write API (run
//! creation, stage start/commit, batched event appends, questions) into
//! `$CARGO_TARGET_TMPDIR/app-bench-home` and reused by later runs. It holds
//! 9,999 small runs of 98–99 events and 4 stages each (varied statuses,
//! workflows, goals, labels; pending questions on blocked runs, answered
//! ones on some others) and one big run: a 300-node chain with 300 stages,
//! 20,000 events and its `graph.fabro`.
//!
//! Each measurement opens a fresh `Views` (the app opens one per command),
//! runs the query and serialises the result with serde_json (what crosses
//! the Tauri IPC). "Cold" samples first evict the database file from the OS
//! page cache (`dd iflag=nocache`); "warm" ones do not.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::json;
use weft::ipc::protocol::RunList;
use weft::model::RunStatus;
use weft::model::{EdgeReason, EventKind, Stream};
use weft::model::{FailureClass, Outcome, Status};
use weft::store::{
    Home, NewRun, QuestionRecord, QuestionStatus, RunDir, StageCommit, Store, timestamp_of,
};
use weft::views::Views;

#[path = "support/mod.rs"]
mod support;
use support::percentile;

const SMALL_RUNS: usize = 9_999;
const TOTAL_EVENTS: usize = 1_000_000;
const BIG_EVENTS: usize = 20_000;
const BIG_NODES: usize = 300;
/// Events of the small runs together.
const SMALL_EVENTS: usize = TOTAL_EVENTS - BIG_EVENTS;
/// Where the big run sits in creation order (0 = oldest).
const BIG_POSITION: usize = 9_000;
/// Bump when the generated data changes, so an old home is rebuilt.
const FORMAT: &str = "app-bench v1: 10000 runs, 1000000 events";

const WORKFLOWS: [&str; 12] = [
    "ci",
    "deploy",
    "nightly-build",
    "release",
    "lint-fix",
    "docs",
    "triage",
    "refactor",
    "benchmarks",
    "security-scan",
    "migrate-db",
    "review",
];
const LABELS: [&str; 6] = [
    "nightly",
    "team-a",
    "team-b",
    "prod",
    "staging",
    "experiment",
];
const VERBS: [&str; 8] = [
    "Fix", "Add", "Refactor", "Speed up", "Document", "Test", "Remove", "Port",
];
const THINGS: [&str; 10] = [
    "the login flow",
    "flaky integration tests",
    "the billing export",
    "search ranking",
    "the CSV importer",
    "cache invalidation",
    "the settings page",
    "retry handling in the HTTP client",
    "the nightly report",
    "memory use of the indexer",
];

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "n/a".to_string(),
        |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// A 300-node chain of command nodes (plus start and exit).
fn chain_source(n: usize) -> String {
    let mut dot = String::from(
        "digraph BigChain {\n  graph [goal=\"Build, test and package every module\"]\n  \
         start [shape=Mdiamond]\n  exit [shape=Msquare]\n",
    );
    for i in 0..n {
        dot.push_str(&format!(
            "  n{i} [label=\"Step {i}: build module {i}\", shape=parallelogram, \
             script=\"make -C modules/m{i} all 2>&1 | tee logs/m{i}.log\"]\n"
        ));
    }
    dot.push_str("  start -> n0\n");
    for i in 1..n {
        dot.push_str(&format!(
            "  n{} -> n{i} [condition=\"outcome=succeeded\"]\n",
            i - 1
        ));
    }
    dot.push_str(&format!("  n{} -> exit\n}}\n", n - 1));
    dot
}

fn output_line(run: usize, stage: usize, line: usize) -> String {
    format!(
        "[{stage:03}:{line:03}] compiling module_{run}_{stage} (src/lib.rs, {} warnings) ... ok\n",
        (run + line) % 7
    )
}

/// Records one stage: start, `stage.started` plus `outputs` command lines in
/// one append, then the commit with its closing events. Returns the events
/// written.
fn record_stage(
    store: &mut Store,
    run_id: &str,
    (run_no, stage_no): (usize, usize),
    node: &str,
    next: &str,
    outputs: usize,
    failed: bool,
) -> Result<usize> {
    store.stage_started(run_id, node, 1, "command")?;
    let mut events = Vec::with_capacity(outputs + 1);
    events.push((
        EventKind::StageStarted {
            handler: "command".into(),
            attempt: 1,
            branch: None,
        },
        Some((node, 1)),
    ));
    for line in 0..outputs {
        events.push((
            EventKind::CommandOutput {
                stream: if line % 9 == 8 {
                    Stream::Stderr
                } else {
                    Stream::Stdout
                },
                text: output_line(run_no, stage_no, line),
            },
            Some((node, 1)),
        ));
    }
    store.append_events(run_id, &events)?;
    let outcome = if failed {
        Outcome::failed(FailureClass::Deterministic, "make exited with status 2")
    } else {
        Outcome::succeeded()
    };
    let status = if failed {
        Status::Failed
    } else {
        Status::Succeeded
    };
    let done = if failed {
        EventKind::StageFailed {
            status,
            duration_ms: 1_200 + stage_no as u64,
            attempts: 1,
            outcome: outcome.clone(),
        }
    } else {
        EventKind::StageCompleted {
            status,
            duration_ms: 1_200 + stage_no as u64,
            attempts: 1,
            outcome: outcome.clone(),
        }
    };
    let checkpoint = json!({
        "current_node": next,
        "completed": stage_no + 1,
        "context": {"outcome": status.as_str(), "last_stage": node},
    });
    let closing = vec![
        (done, Some((node, 1))),
        (
            EventKind::EdgeSelected {
                from_node: node.to_string(),
                to_node: next.to_string(),
                label: None,
                condition: Some("outcome=succeeded".into()),
                reason: EdgeReason::Condition,
            },
            Some((node, 1)),
        ),
        (
            EventKind::CheckpointSaved {
                next_node: Some(next.to_string()),
                completed: u32::try_from(stage_no + 1).unwrap_or(u32::MAX),
                checkpoint: checkpoint.clone(),
            },
            None,
        ),
    ];
    store.commit_stage(&StageCommit {
        run_id,
        node_id: node,
        visit: 1,
        status: status.as_str(),
        attempts: 1,
        duration_ms: 1_200 + stage_no as u64,
        failure_reason: failed.then_some("make exited with status 2"),
        outcome: serde_json::to_value(&outcome)?,
        events: closing,
        checkpoint: checkpoint.to_string(),
        files: None,
    })?;
    Ok(outputs + 4)
}

fn question(run_id: &str, n: usize, status: QuestionStatus, asked_at: &str) -> QuestionRecord {
    QuestionRecord {
        id: format!("{run_id}-q{n}"),
        run_id: run_id.to_string(),
        node_id: "approve".into(),
        visit: 1,
        text: "Deploy this build to production?".into(),
        options: vec!["approve".into(), "reject".into()],
        freeform: false,
        status,
        answer: (status == QuestionStatus::Answered).then(|| json!("approve")),
        asked_at: asked_at.to_string(),
        answered_at: (status == QuestionStatus::Answered).then(|| asked_at.to_string()),
        permission: None,
    }
}

/// What [`generate`] made.
struct Generated {
    big_id: String,
}

/// Writes the whole database; returns the big run's id.
fn generate(home: &Home) -> Result<Generated> {
    let mut store = Store::open(home)?;
    let pid = std::process::id();
    let now_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)?
        .as_millis() as u64;
    let total_runs = SMALL_RUNS + 1;
    // One run every 4 minutes, the newest a minute ago.
    let created = |position: usize| now_ms - 60_000 - (total_runs - 1 - position) as u64 * 240_000;
    let mut small_no = 0usize;
    let mut events_written = 0usize;
    let mut big_id = String::new();
    let started = Instant::now();
    for position in 0..total_runs {
        let at_ms = created(position);
        let created_at = timestamp_of(SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms));
        let id =
            ulid::Ulid::from_parts(at_ms, u128::from(position as u64) * 7_919 + 13).to_string();
        if position == BIG_POSITION {
            events_written += big_run(&mut store, home, &id, &created_at, pid)?;
            big_id = id;
            continue;
        }
        let i = small_no;
        small_no += 1;
        let workflow = WORKFLOWS[i % WORKFLOWS.len()];
        let goal = format!(
            "{} {} (ticket #{})",
            VERBS[(i / 3) % VERBS.len()],
            THINGS[(i * 7) % THINGS.len()],
            1_000 + i
        );
        let mut labels = vec![LABELS[i % LABELS.len()].to_string()];
        if i.is_multiple_of(5) {
            labels.push(LABELS[(i / 5) % LABELS.len()].to_string());
            labels.dedup();
        }
        // The newest few runs are live; older ones finished one way or another.
        let status = if i >= SMALL_RUNS - 3 {
            RunStatus::Queued
        } else if i >= SMALL_RUNS - 8 {
            RunStatus::Running
        } else if i >= SMALL_RUNS - 20 {
            RunStatus::Blocked
        } else {
            match i % 20 {
                0..=12 => RunStatus::Succeeded,
                13..=15 => RunStatus::Failed,
                16 | 17 => RunStatus::Cancelled,
                _ => RunStatus::Interrupted,
            }
        };
        store.create_run(&NewRun {
            id: id.clone(),
            workflow_name: workflow.to_string(),
            workflow_path: Some(PathBuf::from(format!("/home/dev/project/{workflow}.fabro"))),
            goal: Some(goal.clone()),
            run_dir: home.runs_dir().join(format!("bench-{id}")),
            work_dir: PathBuf::from("/home/dev/project"),
            inputs: serde_json::Map::from_iter([(
                "branch".to_string(),
                json!(format!("feature/{i}")),
            )]),
            options: json!({"auto_approve": false, "seed": i, "artifacts": ["dist/**"]}),
            labels,
            node_count: 6,
            edge_count: 5,
            created_at: created_at.clone(),
        })?;
        // 98 events per run, one more for the first runs so that all small
        // runs hold exactly SMALL_EVENTS.
        let extra = usize::from(i < SMALL_EVENTS - 98 * SMALL_RUNS);
        let mut written = 0;
        if status != RunStatus::Queued {
            store.mark_running(&id, pid)?;
            let mut first = vec![(
                EventKind::RunStarted {
                    workflow: workflow.to_string(),
                    goal: Some(goal),
                    run_dir: format!("/runs/{id}"),
                    resumed: false,
                },
                None,
            )];
            if extra == 1 {
                first.push((
                    EventKind::RunNotice {
                        message: "the workflow's model is not in the catalog".into(),
                    },
                    None,
                ));
            }
            written += store.append_events(&id, &first)?.len();
            let nodes = ["setup", "build", "test", "package"];
            for (s, node) in nodes.iter().enumerate() {
                let next = nodes.get(s + 1).copied().unwrap_or("exit");
                let failed = status == RunStatus::Failed && s == 3;
                written += record_stage(&mut store, &id, (i, s), node, next, 20, failed)?;
            }
            let end = match status {
                RunStatus::Succeeded => EventKind::RunCompleted {
                    duration_ms: 5_000,
                    failed_stages: Vec::new(),
                    exit_node: Some("exit".into()),
                },
                RunStatus::Failed => EventKind::RunFailed {
                    reason: "stage package failed: make exited with status 2".into(),
                    duration_ms: 5_000,
                },
                RunStatus::Cancelled => EventKind::RunCancelled {
                    reason: "cancelled by the user".into(),
                    duration_ms: 5_000,
                },
                RunStatus::Interrupted => EventKind::RunInterrupted {
                    reason: "the daemon stopped".into(),
                    duration_ms: 5_000,
                },
                RunStatus::Blocked => EventKind::InterviewStarted {
                    question_id: format!("{id}-q0"),
                    question: "Deploy this build to production?".into(),
                    options: vec!["approve".into(), "reject".into()],
                    freeform: false,
                    context: None,
                    timeout_ms: None,
                    default_choice: None,
                    permission: None,
                },
                _ => EventKind::RunNotice {
                    message: "waiting for the next stage".into(),
                },
            };
            written += store.append_events(&id, &[(end, None)])?.len();
            let reason = (status == RunStatus::Failed)
                .then_some("stage package failed: make exited with status 2");
            if status != RunStatus::Running {
                store.set_status(&id, status, reason)?;
            }
        } else {
            // The three queued runs hold their share of events as notices
            // (as a run re-queued after an interruption might), so every
            // small run holds the same number of events.
            let notices: Vec<_> = (0..98 + extra)
                .map(|n| {
                    (
                        EventKind::RunNotice {
                            message: format!("queued behind {n} other runs"),
                        },
                        None,
                    )
                })
                .collect();
            written += store.append_events(&id, &notices)?.len();
        }
        if status == RunStatus::Blocked {
            store.insert_question(&question(&id, 0, QuestionStatus::Pending, &created_at))?;
        } else if i % 10 == 3 {
            store.insert_question(&question(&id, 0, QuestionStatus::Answered, &created_at))?;
        }
        anyhow::ensure!(written == 98 + extra, "run {i}: {written} events");
        events_written += written;
        if position % 1_000 == 999 {
            eprintln!(
                "  {} runs, {} events, {:.1} s",
                position + 1,
                events_written,
                started.elapsed().as_secs_f64()
            );
        }
    }
    anyhow::ensure!(
        events_written == TOTAL_EVENTS,
        "wrote {events_written} events, not {TOTAL_EVENTS}"
    );
    drop(store);
    Ok(Generated { big_id })
}

/// The big run: 300 stages, 20,000 events, its graph.fabro. Returns the
/// events written.
fn big_run(store: &mut Store, home: &Home, id: &str, created_at: &str, pid: u32) -> Result<usize> {
    let source = chain_source(BIG_NODES);
    let dir = RunDir::create(&home.runs_dir(), id)?;
    dir.write_file("graph.fabro", source.as_bytes())?;
    store.create_run(&NewRun {
        id: id.to_string(),
        workflow_name: "BigChain".into(),
        workflow_path: Some(PathBuf::from("/home/dev/project/big-chain.fabro")),
        goal: Some("Build, test and package every module".into()),
        run_dir: dir.path().to_path_buf(),
        work_dir: PathBuf::from("/home/dev/project"),
        inputs: serde_json::Map::new(),
        options: json!({"auto_approve": true}),
        labels: vec!["nightly".into(), "big".into()],
        node_count: u32::try_from(BIG_NODES + 2)?,
        edge_count: u32::try_from(BIG_NODES + 1)?,
        created_at: created_at.to_string(),
    })?;
    store.mark_running(id, pid)?;
    let mut written = store
        .append_events(
            id,
            &[(
                EventKind::RunStarted {
                    workflow: "BigChain".into(),
                    goal: Some("Build, test and package every module".into()),
                    run_dir: dir.path().display().to_string(),
                    resumed: false,
                },
                None,
            )],
        )?
        .len();
    // run.started + run.completed + 4 per stage + the output lines.
    let outputs = BIG_EVENTS - 2 - 4 * BIG_NODES;
    for s in 0..BIG_NODES {
        let node = format!("n{s}");
        let next = if s + 1 < BIG_NODES {
            format!("n{}", s + 1)
        } else {
            "exit".into()
        };
        let lines = outputs / BIG_NODES + usize::from(s < outputs % BIG_NODES);
        written += record_stage(store, id, (100_000, s), &node, &next, lines, false)?;
    }
    written += store
        .append_events(
            id,
            &[(
                EventKind::RunCompleted {
                    duration_ms: 360_000,
                    failed_stages: Vec::new(),
                    exit_node: Some("exit".into()),
                },
                None,
            )],
        )?
        .len();
    store.set_status(id, RunStatus::Succeeded, None)?;
    anyhow::ensure!(written == BIG_EVENTS, "big run: {written} events");
    Ok(written)
}

/// Drops the database files from the OS page cache (clean pages only).
fn evict(home: &Home) {
    for path in db_files(home) {
        let _ = Command::new("dd")
            .arg(format!("if={}", path.display()))
            .args(["iflag=nocache", "count=0", "status=none"])
            .status();
    }
}

fn db_files(home: &Home) -> Vec<PathBuf> {
    let db = home.db_path();
    let mut files = vec![db.clone()];
    for suffix in ["-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db.display()));
        if p.is_file() {
            files.push(p);
        }
    }
    files
}

fn size_on_disk(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// One sample: open + query time, serialisation time, JSON bytes.
struct Sample {
    query: Duration,
    ser: Duration,
    bytes: usize,
}

/// Times `query` on a fresh `Views`, then serialises its result.
fn sample<T: Serialize>(home: &Home, query: &dyn Fn(&Views) -> Result<T>) -> Result<Sample> {
    let t = Instant::now();
    let views = Views::open(home)?;
    let value = query(&views)?;
    let query_time = t.elapsed();
    let t = Instant::now();
    let json = serde_json::to_vec(&value)?;
    let ser = t.elapsed();
    Ok(Sample {
        query: query_time,
        ser,
        bytes: json.len(),
    })
}

struct Case<'a> {
    name: &'static str,
    run: Box<dyn Fn() -> Result<Sample> + 'a>,
}

fn case<'a, T: Serialize + 'a>(
    name: &'static str,
    home: &'a Home,
    query: impl Fn(&Views) -> Result<T> + 'a,
) -> Case<'a> {
    Case {
        name,
        run: Box::new(move || sample(home, &query)),
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rebuild = args.iter().any(|a| a == "--rebuild");
    let reps: usize = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let cold_reps = 5;
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("app-bench-home");
    let home = Home::at(&root);
    let marker = root.join("bench-format.txt");
    println!("load average before: {}", load_average());
    println!("WEFT_HOME = {}", root.display());
    let fresh =
        rebuild || std::fs::read_to_string(&marker).map_or(true, |m| !m.starts_with(FORMAT));
    let big_id = if fresh {
        if root.exists() {
            std::fs::remove_dir_all(&root).context("removing the old bench home")?;
        }
        println!("generating {SMALL_RUNS} small runs + 1 big run, {TOTAL_EVENTS} events ...");
        let t = Instant::now();
        let generated = generate(&home)?;
        let secs = t.elapsed().as_secs_f64();
        println!("generated in {secs:.1} s");
        std::fs::write(
            &marker,
            format!(
                "{FORMAT}\nbig={}\ngenerated_secs={secs:.1}\n",
                generated.big_id
            ),
        )?;
        generated.big_id
    } else {
        let text = std::fs::read_to_string(&marker)?;
        println!(
            "reusing the database generated earlier ({}; `-- --rebuild` regenerates)",
            text.lines()
                .find(|l| l.starts_with("generated_secs="))
                .map_or("?", |l| l.trim_start_matches("generated_secs="))
                .to_string()
                + " s to generate"
        );
        text.lines()
            .find_map(|l| l.strip_prefix("big="))
            .context("marker without big run id")?
            .to_string()
    };
    let db_bytes: u64 = db_files(&home).iter().map(|p| size_on_disk(p)).sum();
    println!(
        "database: {:.1} MB on disk ({})",
        db_bytes as f64 / 1e6,
        db_files(&home)
            .iter()
            .map(|p| format!(
                "{} {:.1} MB",
                p.file_name().unwrap_or_default().to_string_lossy(),
                size_on_disk(p) as f64 / 1e6
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("big run: {big_id}");

    // Sanity: the data is what it claims.
    {
        let views = Views::open(&home)?;
        let all = views.runs(&RunList::default())?;
        anyhow::ensure!(all.total == (SMALL_RUNS + 1) as u64, "total {}", all.total);
        let view = views.run(&big_id)?;
        anyhow::ensure!(
            view.stages.len() == BIG_NODES,
            "stages {}",
            view.stages.len()
        );
        anyhow::ensure!(view.run.last_seq == BIG_EVENTS as u64);
        anyhow::ensure!(!view.graph_source.is_empty(), "graph.fabro missing");
    }

    let first_page = RunList {
        limit: Some(200),
        ..RunList::default()
    };
    let big = big_id.as_str();
    let cases = vec![
        case("runs: first page (200)", &home, move |v: &Views| {
            Ok(v.runs(&first_page)?)
        }),
        case("runs: status=failed (200)", &home, |v: &Views| {
            Ok(v.runs(&RunList {
                status: Some(RunStatus::Failed),
                limit: Some(200),
                ..RunList::default()
            })?)
        }),
        case("runs: text \"login\" (200)", &home, |v: &Views| {
            Ok(v.runs(&RunList {
                text: Some("login".into()),
                limit: Some(200),
                ..RunList::default()
            })?)
        }),
        case("runs: text, no match", &home, |v: &Views| {
            Ok(v.runs(&RunList {
                text: Some("zzzz-nothing".into()),
                limit: Some(200),
                ..RunList::default()
            })?)
        }),
        case("runs: label \"prod\" (200)", &home, |v: &Views| {
            Ok(v.runs(&RunList {
                label: Some("prod".into()),
                limit: Some(200),
                ..RunList::default()
            })?)
        }),
        case("runs: last page (offset 9800)", &home, |v: &Views| {
            Ok(v.runs(&RunList {
                limit: Some(200),
                offset: Some(9_800),
                ..RunList::default()
            })?)
        }),
        // What the tray's thread reads every 2 s (src-tauri/src/tray.rs).
        case("tray: attention (10 gates)", &home, |v: &Views| {
            Ok(v.attention(10)?)
        }),
        case("run(big): view + graph", &home, move |v: &Views| {
            Ok(v.run(big)?)
        }),
        case("events(big, 0, 10000)", &home, move |v: &Views| {
            Ok(v.events(big, 0, 10_000)?)
        }),
        case("events(big, 10000, 10000)", &home, move |v: &Views| {
            Ok(v.events(big, 10_000, 10_000)?)
        }),
    ];

    // The two end-to-end figures the issue sets targets for: everything the
    // backend does for the runs list at start, and for opening the big run
    // (view, then both event pages), each serialised.
    let open_big = || -> Result<Sample> {
        let mut total = Sample {
            query: Duration::ZERO,
            ser: Duration::ZERO,
            bytes: 0,
        };
        let parts: [&dyn Fn() -> Result<Sample>; 3] = [
            &|| sample(&home, &|v: &Views| Ok(v.run(big)?)),
            &|| sample(&home, &|v: &Views| Ok(v.events(big, 0, 10_000)?)),
            &|| sample(&home, &|v: &Views| Ok(v.events(big, 10_000, 10_000)?)),
        ];
        for part in parts {
            let s = part()?;
            total.query += s.query;
            total.ser += s.ser;
            total.bytes += s.bytes;
        }
        Ok(total)
    };
    let mut all: Vec<Case<'_>> = cases;
    all.push(Case {
        name: "open big run: view + 2 event pages",
        run: Box::new(open_big),
    });

    println!();
    println!(
        "| query | cold p50 | cold max | warm p50 | warm p95 | serialise p50 | warm p50 + serialise | JSON size |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut targets = Vec::new();
    for c in &all {
        let mut cold = Vec::new();
        for _ in 0..cold_reps {
            evict(&home);
            cold.push((c.run)()?.query);
        }
        for _ in 0..2 {
            (c.run)()?;
        }
        let mut warm = Vec::new();
        let mut ser = Vec::new();
        let mut bytes = 0;
        let mut total = Vec::new();
        for _ in 0..reps {
            let s = (c.run)()?;
            warm.push(s.query);
            ser.push(s.ser);
            total.push(s.query + s.ser);
            bytes = s.bytes;
        }
        cold.sort();
        warm.sort();
        ser.sort();
        total.sort();
        println!(
            "| {} | {} ms | {} ms | {} ms | {} ms | {} ms | {} ms | {:.2} MB |",
            c.name,
            ms(percentile(&cold, 0.5)),
            ms(*cold.last().unwrap_or(&Duration::ZERO)),
            ms(percentile(&warm, 0.5)),
            ms(percentile(&warm, 0.95)),
            ms(percentile(&ser, 0.5)),
            ms(percentile(&total, 0.5)),
            bytes as f64 / 1e6
        );
        if c.name.starts_with("runs: first page") || c.name.starts_with("open big run") {
            let worst = percentile(&warm, 0.95).max(*cold.last().unwrap_or(&Duration::ZERO))
                + percentile(&ser, 0.95);
            targets.push((c.name, worst));
        }
    }
    println!();
    println!(
        "| target (backend share) | worst measured (max cold or p95 warm, + p95 serialise) | met |"
    );
    println!("|---|---:|:-:|");
    for (name, worst) in targets {
        println!(
            "| {name} < 1 s | {} ms | {} |",
            ms(worst),
            if worst < Duration::from_secs(1) {
                "yes"
            } else {
                "NO"
            }
        );
    }
    println!();
    println!(
        "{reps} warm repetitions, {cold_reps} cold (database evicted from the OS page cache first); \
         each sample opens a fresh Views."
    );
    println!("load average after: {}", load_average());
    Ok(())
}
