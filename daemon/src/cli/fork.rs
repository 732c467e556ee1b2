//! `weft rewind` and `weft fork`: a new run from one of a run's checkpoints
//! (through the daemon, which owns the run store), or with `--list` the
//! run's checkpoint timeline.

use std::io::Write;

use super::ForkArgs;
use super::daemon::message;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use crate::ipc::protocol::{RunFork, RunTimeline};
use crate::store::TimelineEntry;

/// `weft rewind` (`rewind`) or `weft fork`.
pub fn run(args: &ForkArgs, rewind: bool) -> CliResult {
    if rewind && !args.list && args.target.is_none() {
        return Err(CliError::usage(
            "name the checkpoint to rewind to: NODE, NODE@VISIT or @N (`weft rewind RUN --list` shows them)",
        ));
    }
    let home = super::home()?;
    super::block_on(async {
        let client = super::daemon::connect(&home)
            .await
            .map_err(|e| CliError::Usage(format!("cannot reach weftd: {e}")))?;
        if args.list {
            let timeline = client
                .call(RunTimeline {
                    run: args.run.clone(),
                })
                .await
                .map_err(|e| CliError::Usage(message(&e)))?;
            let mut out = std::io::stdout().lock();
            let written = if args.json {
                let entries: Vec<serde_json::Value> = timeline.iter().map(summary).collect();
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&entries).unwrap_or_default()
                )
            } else {
                write_timeline(&mut out, &timeline)
            };
            return super::output_done(written);
        }
        let forked = client
            .call(RunFork {
                run: args.run.clone(),
                target: args.target.clone(),
                rewind,
            })
            .await
            .map_err(|e| CliError::Usage(message(&e)))?;
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "run_id": forked.run_id,
                    "run_dir": forked.run_dir,
                    "source": forked.source,
                    "archived_source": forked.archived_source,
                    "from": summary(&forked.from),
                }))
                .unwrap_or_default()
            );
        } else {
            let from = &forked.from;
            println!(
                "{} run {} at {}@{} (@{}) as run {}",
                if rewind { "rewound" } else { "forked" },
                forked.source,
                from.node_id,
                from.visit,
                from.ordinal,
                forked.run_id
            );
            if forked.archived_source {
                println!("run {} is archived", forked.source);
            }
            println!("continue it with: weft resume {}", forked.run_id);
        }
        exit::code(EXIT_OK)
    })
}

/// An entry without its checkpoint, for `--json`.
fn summary(entry: &TimelineEntry) -> serde_json::Value {
    serde_json::json!({
        "ordinal": entry.ordinal,
        "node_id": entry.node_id,
        "visit": entry.visit,
        "status": entry.status,
        "ts": entry.ts,
        "next_node": entry.next_node,
        "git_commit_sha": entry.git_commit_sha,
    })
}

/// `@N  node@visit  status  → next  commit`, one line per checkpoint.
fn write_timeline(out: &mut impl Write, timeline: &[TimelineEntry]) -> std::io::Result<()> {
    if timeline.is_empty() {
        return writeln!(out, "no checkpoints: no stage was committed");
    }
    for entry in timeline {
        let at = format!("{}@{}", entry.node_id, entry.visit);
        let next = entry.next_node.as_deref().unwrap_or("(end)");
        let commit = entry
            .git_commit_sha
            .as_deref()
            .map(|s| s.get(..12).unwrap_or(s))
            .unwrap_or("-");
        writeln!(
            out,
            "@{:<4} {at:<24} {:<20} -> {next:<20} {commit}",
            entry.ordinal, entry.status
        )?;
    }
    Ok(())
}
