//! `weft dump RUN --out DIR`: exports a run in the layout of Fabro's
//! `fabro dump` (agents/outputs.mdx): `stages/{rank:03}-{node_id}@{visit}/`
//! with each stage's files (`diff.patch` among them), plus `events.jsonl`,
//! `checkpoint.json`, `manifest.json`, `graph.fabro`, `conclusion.json` and
//! `final.patch` at the top.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::DumpArgs;
use super::exit::{CliError, CliResult};
use crate::store::{RunDir, RunRecord, StageRecord, Store};

/// The stage files that are copied when the stage wrote them
/// (reference/run-directory.mdx), plus a parallel stage's branch results and
/// the context file a command asked for, an agent's transcript and, in git
/// checkpoint mode, the stage's diff.
const STAGE_FILES: [&str; 11] = [
    "prompt.md",
    "response.md",
    "status.json",
    "stdout.log",
    "stderr.log",
    "script_invocation.json",
    "script_timing.json",
    "parallel_results.json",
    "context.json",
    "transcript.jsonl",
    "diff.patch",
];

/// The run-directory files copied to the top of the dump.
/// `conclusion.json` exists only for runs that ended, `final.patch` only
/// for those of them checkpointed in git.
const RUN_FILES: [&str; 4] = [
    "manifest.json",
    "graph.fabro",
    "conclusion.json",
    "final.patch",
];

/// Files a run may lack without anything being wrong.
const OPTIONAL_RUN_FILES: [&str; 2] = ["conclusion.json", "final.patch"];

/// Events are read and written this many at a time.
const PAGE: u32 = 1000;

/// `weft dump`.
pub fn run(args: &DumpArgs) -> CliResult {
    let (store, record) = super::open_run(&args.run)?;
    prepare(&args.out, args.force).map_err(CliError::Usage)?;
    let (stages, events) = dump(&store, &record, &args.out).map_err(CliError::Usage)?;
    let mut out = std::io::stdout().lock();
    super::output_done(writeln!(
        out,
        "dumped {} and {} to {}",
        super::report::count(stages as u64, "stage", "stages"),
        super::report::count(events, "event", "events"),
        args.out.display()
    ))
}

/// Makes sure `out` is a directory that may be written: created if
/// missing; an existing one must be empty unless `force`, so a dump never
/// mixes with unrelated files by accident.
fn prepare(out: &Path, force: bool) -> Result<(), String> {
    if out.exists() {
        if !out.is_dir() {
            return Err(format!("{} exists and is not a directory", out.display()));
        }
        let mut entries =
            std::fs::read_dir(out).map_err(|e| format!("cannot read {}: {e}", out.display()))?;
        if !force && entries.next().is_some() {
            return Err(format!(
                "{} is not empty; choose another directory or pass --force to write into it",
                out.display()
            ));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))
}

/// Writes the dump and returns how many stages and events it holds.
fn dump(store: &Store, record: &RunRecord, out: &Path) -> Result<(usize, u64), String> {
    let run_dir = RunDir::open(&record.run_dir);
    let stages = store
        .stages(&record.id)
        .map_err(|e| format!("cannot read the stages of run {}: {e}", record.id))?;
    for stage in &stages {
        let target = out.join("stages").join(stage_folder(stage));
        create_dir(&target)?;
        let source = run_dir.node_dir(&stage.node_id, stage.visit);
        for name in STAGE_FILES {
            copy_if_present(&source.join(name), &target.join(name))?;
        }
        // Files the run's writer had not written yet (they follow the
        // stage's commit), or that a crash kept it from writing: from the
        // database, which has them since the commit.
        let committed = store
            .committed_stage_files(&record.id, &stage.node_id, stage.visit)
            .ok()
            .flatten()
            .unwrap_or_default();
        for (name, text) in committed {
            let path = target.join(&name);
            if STAGE_FILES.contains(&name.as_str()) && !path.exists() {
                std::fs::write(&path, text.unwrap_or_default())
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
        }
    }

    let events = write_events(store, &record.id, &out.join("events.jsonl"))?;

    if let Some(checkpoint) = &record.checkpoint {
        // Pretty for reading; a checkpoint that does not parse is written
        // as stored, since the dump is what one reaches for when debugging.
        let text = serde_json::from_str::<serde_json::Value>(checkpoint)
            .ok()
            .and_then(|value| serde_json::to_string_pretty(&value).ok())
            .unwrap_or_else(|| checkpoint.clone());
        write(&out.join("checkpoint.json"), format!("{text}\n").as_bytes())?;
    }

    for name in RUN_FILES {
        let source = record.run_dir.join(name);
        if !copy_if_present(&source, &out.join(name))? && !OPTIONAL_RUN_FILES.contains(&name) {
            eprintln!(
                "warning: {} is missing; the dump has no {name}",
                source.display()
            );
        }
    }
    Ok((stages.len(), events))
}

/// `{rank:03}-{node_id}@{visit}`, with the node id made path-safe exactly
/// as in the run directory's `nodes/` folder.
fn stage_folder(stage: &StageRecord) -> String {
    // `node_dir` of visit 1 ends in the path-safe node id; reusing it keeps
    // one mapping from node ids to folder names.
    let safe = RunDir::open(PathBuf::new())
        .node_dir(&stage.node_id, 1)
        .file_name()
        .map_or_else(|| "_".to_string(), |n| n.to_string_lossy().into_owned());
    format!("{:03}-{safe}@{}", stage.rank, stage.visit)
}

/// Writes every event of the run to `path`, one envelope per line, paging
/// through the database so a long run is never held in memory whole.
fn write_events(store: &Store, run_id: &str, path: &Path) -> Result<u64, String> {
    let file = std::fs::File::create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut writer = std::io::BufWriter::new(file);
    let mut after = 0;
    let mut count = 0;
    loop {
        let page = store
            .events(run_id, after, Some(PAGE))
            .map_err(|e| format!("cannot read the events of run {run_id}: {e}"))?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for event in &page {
            let line = serde_json::to_string(event)
                .map_err(|e| format!("cannot encode event {}: {e}", event.seq))?;
            writeln!(writer, "{line}")
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            count += 1;
        }
    }
    writer
        .flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(count)
}

fn create_dir(path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("cannot create {}: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Copies `from` to `to` and says whether there was anything to copy.
fn copy_if_present(from: &Path, to: &Path) -> Result<bool, String> {
    match std::fs::copy(from, to) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!(
            "cannot copy {} to {}: {e}",
            from.display(),
            to.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_folders_carry_rank_safe_id_and_visit() {
        let stage = |node: &str, visit: u32, rank: u32| StageRecord {
            run_id: "R".into(),
            node_id: node.into(),
            visit,
            rank,
            handler: "command".into(),
            status: "succeeded".into(),
            attempts: 1,
            started_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: None,
            duration_ms: None,
            failure_reason: None,
            outcome: None,
            branch: None,
        };
        assert_eq!(stage_folder(&stage("start", 1, 1)), "001-start@1");
        assert_eq!(stage_folder(&stage("test", 2, 12)), "012-test@2");
        assert_eq!(stage_folder(&stage("a/b", 1, 3)), "003-a_b@1");
        assert_eq!(stage_folder(&stage("..", 1, 4)), "004-__@1");
    }
}
