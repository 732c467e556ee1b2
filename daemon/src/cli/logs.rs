//! `weft logs RUN [NODE]`: what a run's stages wrote, read from the stage
//! folders of the run directory, in execution order.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::progress::seconds;
use super::reader::Reader;
use super::{EXIT_USAGE, LogsArgs};
use crate::engine::outcome::LlmUsage;
use crate::ipc::protocol::RunDetail;
use crate::store::{RunDir, StageRecord};

/// `weft logs`.
pub fn run(args: &LogsArgs) -> u8 {
    let home = match super::home() {
        Ok(h) => h,
        Err(code) => return code,
    };
    super::with_runtime(|| async {
        let detail = match Reader::open(&home, args.no_daemon).await {
            Ok(reader) => reader.get(&args.run).await,
            Err(e) => Err(e),
        };
        let RunDetail { run, stages } = match detail {
            Ok(detail) => detail,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        };
        let chosen = match choose(&stages, args.node.as_deref(), args.visit) {
            Ok(chosen) => chosen,
            Err(message) => {
                eprintln!("error: run {}: {message}", run.id);
                return EXIT_USAGE;
            }
        };
        let dir = RunDir::open(&run.run_dir);
        let mut out = std::io::stdout().lock();
        let written = chosen
            .iter()
            .try_for_each(|stage| write_stage(&mut out, &dir, stage));
        super::output_done(written)
    })
}

/// The stages to show: all, or NODE's (one visit with `--visit`). A node or
/// visit that never ran is an error naming the ones that did.
fn choose<'a>(
    stages: &'a [StageRecord],
    node: Option<&str>,
    visit: Option<u32>,
) -> Result<Vec<&'a StageRecord>, String> {
    let Some(node) = node else {
        return Ok(stages.iter().collect());
    };
    let of_node: Vec<&StageRecord> = stages.iter().filter(|s| s.node_id == node).collect();
    if of_node.is_empty() {
        let mut ran: Vec<&str> = Vec::new();
        for stage in stages {
            if !ran.contains(&stage.node_id.as_str()) {
                ran.push(&stage.node_id);
            }
        }
        return Err(if ran.is_empty() {
            format!("node `{node}` never ran; no stage has run yet")
        } else {
            format!("node `{node}` never ran; these did: {}", ran.join(", "))
        });
    }
    let Some(visit) = visit else {
        return Ok(of_node);
    };
    let matching: Vec<&StageRecord> = of_node
        .iter()
        .copied()
        .filter(|s| s.visit == visit)
        .collect();
    if matching.is_empty() {
        let visits: Vec<String> = of_node.iter().map(|s| s.visit.to_string()).collect();
        return Err(format!(
            "node `{node}` has no visit {visit}; its visits are {}",
            visits.join(", ")
        ));
    }
    Ok(matching)
}

/// `== node@visit (status, duration) ==`, then the stage's stdout, its
/// stderr under `-- stderr --` when there is any, and an LLM stage's
/// response under `-- response --`.
fn write_stage(out: &mut impl Write, dir: &RunDir, stage: &StageRecord) -> std::io::Result<()> {
    let duration = stage.duration_ms.map_or_else(
        || "running".to_string(),
        |ms| seconds(Duration::from_millis(ms)),
    );
    // An LLM stage's header names the model and what it spent.
    let llm = stage
        .outcome
        .as_ref()
        .and_then(|o| o.get("llm"))
        .and_then(|l| serde_json::from_value::<LlmUsage>(l.clone()).ok())
        .map(|l| format!(", {}", l.describe()))
        .unwrap_or_default();
    writeln!(
        out,
        "== {}@{} ({}, {duration}{llm}) ==",
        stage.node_id, stage.visit, stage.status
    )?;
    let folder = dir.node_dir(&stage.node_id, stage.visit);
    if let Some(text) = read(&folder.join("stdout.log")) {
        write_text(out, &text)?;
    }
    if let Some(text) = read(&folder.join("stderr.log")) {
        writeln!(out, "-- stderr --")?;
        write_text(out, &text)?;
    }
    if let Some(text) = read(&folder.join("response.md")) {
        writeln!(out, "-- response --")?;
        write_text(out, &text)?;
    }
    Ok(())
}

/// The file's text when it exists and is not empty. Logs are shown as they
/// are, so bytes that are not UTF-8 are replaced rather than refused.
fn read(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    (!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned())
}

/// `text`, ending in a newline so the next header starts its own line.
fn write_text(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(node: &str, visit: u32, rank: u32) -> StageRecord {
        StageRecord {
            run_id: "R".into(),
            node_id: node.into(),
            visit,
            rank,
            handler: "command".into(),
            status: "succeeded".into(),
            attempts: 1,
            started_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: None,
            duration_ms: Some(10),
            failure_reason: None,
            outcome: None,
            branch: None,
        }
    }

    #[test]
    fn a_node_selects_all_its_visits_and_visit_narrows_to_one() {
        let stages = [stage("start", 1, 1), stage("t", 1, 2), stage("t", 2, 3)];
        let ranks = |chosen: Vec<&StageRecord>| chosen.iter().map(|s| s.rank).collect::<Vec<_>>();
        assert_eq!(ranks(choose(&stages, None, None).expect("all")), [1, 2, 3]);
        assert_eq!(ranks(choose(&stages, Some("t"), None).expect("t")), [2, 3]);
        assert_eq!(
            ranks(choose(&stages, Some("t"), Some(2)).expect("t@2")),
            [3]
        );
    }

    #[test]
    fn a_node_that_never_ran_names_the_ones_that_did() {
        let stages = [stage("start", 1, 1), stage("t", 1, 2), stage("t", 2, 3)];
        let error = choose(&stages, Some("deploy"), None).expect_err("never ran");
        assert_eq!(error, "node `deploy` never ran; these did: start, t");
        let error = choose(&stages, Some("t"), Some(5)).expect_err("no such visit");
        assert_eq!(error, "node `t` has no visit 5; its visits are 1, 2");
    }
}
