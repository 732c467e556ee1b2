//! `weft ps`: a table (or JSON array) of recorded runs, newest first.

use std::io::Write;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::PsArgs;
use super::exit::{CliError, CliResult};
use super::reader::Reader;
use super::report::{Style, status_colour};
use crate::ipc::protocol::RunList;
use crate::model::{RunStatus, RunSummary};
use crate::store::{Home, Store};
use crate::util::duration::elapsed;
use crate::util::text::one_line;

/// Without `--all`, how many of the most recent runs are listed besides the
/// active ones.
const RECENT: u32 = 20;

/// How many characters of a goal the table shows.
const GOAL_WIDTH: usize = 48;

/// A run as `weft ps --json` prints it.
#[derive(Debug, Serialize)]
struct PsRow<'a> {
    id: &'a str,
    status: RunStatus,
    workflow_name: &'a str,
    goal: Option<&'a str>,
    created_at: &'a str,
    started_at: Option<&'a str>,
    finished_at: Option<&'a str>,
    /// `finished_at - started_at`; null until the run has finished.
    duration_ms: Option<u64>,
    failure_reason: Option<&'a str>,
    run_dir: String,
    labels: &'a [String],
    /// Where its commands ran when not on the host (`docker IMAGE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<&'a str>,
    /// Language-model calls, tokens and dollars; absent when none was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    llm: Option<crate::model::RunSpend>,
    failed_stages: &'a [String],
}

impl<'a> PsRow<'a> {
    fn of(run: &'a RunSummary) -> PsRow<'a> {
        PsRow {
            id: &run.id,
            status: run.status,
            workflow_name: &run.workflow_name,
            goal: run.goal.as_deref(),
            created_at: &run.created_at,
            started_at: run.started_at.as_deref(),
            finished_at: run.finished_at.as_deref(),
            duration_ms: duration(run).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            failure_reason: run.failure_reason.as_deref(),
            run_dir: run.run_dir.display().to_string(),
            labels: &run.labels,
            sandbox: run.sandbox.as_deref(),
            llm: run.llm,
            failed_stages: &run.failed_stages,
        }
    }
}

/// `weft ps`.
pub fn run(args: &PsArgs) -> CliResult {
    let home = super::home()?;
    super::block_on(async {
        let reader = Reader::open(&home, args.no_daemon)
            .await
            .map_err(CliError::Usage)?;
        let runs = select(&reader, args).await.map_err(CliError::Usage)?;
        print(args, &runs, &short_ids(&home, &runs))
    })
}

/// Each run's id as the table shows it: its shortest unique prefix among
/// the recorded runs (see [`Store::unique_prefix_lengths`]), or the whole id
/// when the store cannot be read.
fn short_ids<'a>(home: &Home, runs: &'a [RunSummary]) -> Vec<&'a str> {
    let ids: Vec<&str> = runs.iter().map(|run| run.id.as_str()).collect();
    let lengths = Store::open_read_only(home)
        .and_then(|store| store.unique_prefix_lengths(&ids))
        .unwrap_or_else(|_| ids.iter().map(|id| id.len()).collect());
    ids.iter()
        .zip(lengths)
        .map(|(id, length)| id.get(..length).unwrap_or(id))
        .collect()
}

fn print(args: &PsArgs, runs: &[RunSummary], short: &[&str]) -> CliResult {
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let rows: Vec<PsRow<'_>> = runs.iter().map(PsRow::of).collect();
        serde_json::to_string_pretty(&rows)
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(out, "{text}"))
    } else if runs.is_empty() {
        let filtered = args.status.is_some() || args.workflow.is_some() || args.label.is_some();
        writeln!(
            out,
            "{}",
            if filtered {
                "no runs match"
            } else {
                "no runs yet"
            }
        )
    } else {
        write_table(
            &mut out,
            runs,
            short,
            Style::for_stdout(),
            SystemTime::now(),
        )
    };
    super::output_done(written)
}

/// The runs to list, newest first: with `--all` every run matching the
/// filters; otherwise the active ones (queued, running, blocked) plus the
/// [`RECENT`] (or `--limit`) most recent, so a long-running run never
/// scrolls out of view. `--limit N` then cuts the list to N.
async fn select(reader: &Reader, args: &PsArgs) -> Result<Vec<RunSummary>, String> {
    let query = |status: Option<RunStatus>, limit: Option<u32>| RunList {
        status,
        workflow: args.workflow.clone(),
        label: args.label.clone(),
        limit,
        ..RunList::default()
    };
    let mut runs = if args.all {
        reader.list(query(args.status, args.limit)).await?
    } else {
        let recent = args.limit.unwrap_or(RECENT);
        let mut runs = reader.list(query(args.status, Some(recent))).await?;
        for active in [RunStatus::Queued, RunStatus::Running, RunStatus::Blocked] {
            if args.status.is_some_and(|wanted| wanted != active) {
                continue;
            }
            for run in reader.list(query(Some(active), None)).await? {
                if !runs.iter().any(|seen| seen.id == run.id) {
                    runs.push(run);
                }
            }
        }
        // The same order as the store's: created_at, then id, descending.
        runs.sort_by(|a, b| {
            (b.created_at.as_str(), b.id.as_str()).cmp(&(a.created_at.as_str(), a.id.as_str()))
        });
        runs
    };
    if let Some(limit) = args.limit {
        runs.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    Ok(runs)
}

/// The table: one header line, one line per run, columns padded to fit.
/// The status, marking a run that succeeded past failed stages:
/// `succeeded (1 failed)`.
fn status_cell(run: &RunSummary) -> String {
    match run.failed_stages.len() {
        n if n > 0 && run.status == RunStatus::Succeeded => format!("{} ({n} failed)", run.status),
        _ => run.status.to_string(),
    }
}

fn write_table(
    out: &mut impl Write,
    runs: &[RunSummary],
    short: &[&str],
    style: Style,
    now: SystemTime,
) -> std::io::Result<()> {
    // The LLM column only when some listed run called a model.
    let with_llm = runs.iter().any(|run| run.llm.is_some());
    // The SANDBOX column only when some listed run ran in a container.
    let with_sandbox = runs.iter().any(|run| run.sandbox.is_some());
    let mut header = vec!["ID", "STATUS", "WORKFLOW", "STARTED", "DURATION"];
    if with_sandbox {
        header.push("SANDBOX");
    }
    if with_llm {
        header.push("LLM");
    }
    header.push("GOAL");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .zip(short)
        .map(|(run, id)| {
            let since = run.started_at.as_deref().unwrap_or(&run.created_at);
            let mut row = vec![
                (*id).to_string(),
                status_cell(run),
                // A sub-workflow's child run names the stage it runs under.
                match &run.parent {
                    Some(parent) => format!(
                        "{} (child of {}@{})",
                        run.workflow_name, parent.node_id, parent.visit
                    ),
                    None => run.workflow_name.clone(),
                },
                parse_time(since).map_or_else(|| "-".to_string(), |t| ago(now, t)),
                match duration(run) {
                    Some(d) => elapsed(d),
                    None if matches!(run.status, RunStatus::Running | RunStatus::Blocked) => {
                        "running".to_string()
                    }
                    None => "-".to_string(),
                },
            ];
            if with_sandbox {
                row.push(run.sandbox.clone().unwrap_or_else(|| "host".to_string()));
            }
            if with_llm {
                row.push(run.llm.map_or_else(
                    || "-".to_string(),
                    |spend| {
                        format!(
                            "{} tok, {}",
                            crate::model::spend::tokens(spend.input_tokens + spend.output_tokens),
                            crate::model::spend::cost_text(spend.cost, spend.unpriced_calls)
                        )
                    },
                ));
            }
            row.push(run.goal.as_deref().map(goal_cell).unwrap_or_default());
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // Padding is counted on the plain text; the STATUS cell (column 1) of
    // a run's line is coloured after.
    let line = |cells: &[&str], paint: bool| -> String {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            if paint && i == 1 {
                text.push_str(&style.paint(status_colour(cell), cell));
            } else {
                text.push_str(cell);
            }
            let pad = width.saturating_sub(cell.chars().count());
            text.extend(std::iter::repeat_n(' ', pad));
        }
        text.trim_end().to_string()
    };
    writeln!(out, "{}", line(&header, false))?;
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells, true))?;
    }
    Ok(())
}

/// How long the run took, once it has both started and finished.
fn duration(run: &RunSummary) -> Option<Duration> {
    let started = parse_time(run.started_at.as_deref()?)?;
    let finished = parse_time(run.finished_at.as_deref()?)?;
    Some(finished.duration_since(started).unwrap_or_default())
}

fn parse_time(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}

/// `just now`, `42s ago`, `3m ago`, `5h ago`, `2d ago`. A time in the
/// future (clock skew between processes) reads as `just now`.
fn ago(now: SystemTime, then: SystemTime) -> String {
    let secs = now.duration_since(then).unwrap_or_default().as_secs();
    match secs {
        0..5 => "just now".to_string(),
        5..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// The goal on one line, cut to [`GOAL_WIDTH`] characters with `…`.
fn goal_cell(goal: &str) -> String {
    one_line(goal, GOAL_WIDTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_the_largest_whole_unit() {
        let then = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let at = |secs: u64| ago(then + Duration::from_secs(secs), then);
        assert_eq!(at(0), "just now");
        assert_eq!(at(42), "42s ago");
        assert_eq!(at(185), "3m ago");
        assert_eq!(at(5 * 3600 + 10), "5h ago");
        assert_eq!(at(3 * 86_400), "3d ago");
        assert_eq!(
            ago(then, then + Duration::from_secs(30)),
            "just now",
            "a start in the future is clock skew, not negative time"
        );
    }

    #[test]
    fn long_goals_are_cut_to_one_line() {
        assert_eq!(goal_cell("fix\nthe   bug"), "fix the bug");
        let long = "x".repeat(100);
        let cut = goal_cell(&long);
        assert_eq!(cut.chars().count(), GOAL_WIDTH);
        assert!(cut.ends_with('…'));
    }
}
