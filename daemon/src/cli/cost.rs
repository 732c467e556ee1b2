//! `weft cost`: language-model spending over a window, as tables (per day,
//! model, run or stage) with totals, or as JSON. It reads the store through
//! the same read model as the app's Spending view
//! ([`crate::views::Views::spending`]), so both show the same figures, and
//! works with weftd stopped.

use std::io::Write;

use super::CostArgs;
use super::exit::{CliError, CliResult};
use crate::model::spend::{cost_text, tokens};
use crate::store::{SpendFigures, Spending, SpendingQuery, StoreError};
use crate::views::Views;

/// How a `weft cost` table is broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CostBy {
    Day,
    Model,
    Run,
    Stage,
}

/// `weft cost`.
pub fn run(args: &CostArgs) -> CliResult {
    let home = super::home()?;
    let query = SpendingQuery {
        since: if args.all {
            None
        } else {
            Some(args.since.clone())
        },
        run: args.run.clone(),
        limit: Some(args.limit),
    };
    let spending = Views::open(&home)
        .and_then(|views| views.spending(&query))
        .map_err(|e| match e {
            StoreError::RunNotFound(run) => CliError::Usage(format!(
                "no run matches `{}`; `weft ps --all` lists the runs",
                run.trim()
            )),
            e => CliError::Usage(e.to_string()),
        })?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_string_pretty(&spending)
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(out, "{text}"))
    } else {
        write_report(&mut out, &spending, args.by)
    };
    super::output_done(written)
}

/// The figure cells every table ends with.
const FIGURE_HEADER: [&str; 5] = ["STAGES", "CALLS", "IN", "OUT", "COST"];

fn figure_cells(spend: &SpendFigures) -> [String; 5] {
    [
        spend.stages.to_string(),
        spend.calls.to_string(),
        tokens(spend.input_tokens),
        tokens(spend.output_tokens),
        cost_text(spend.cost, spend.unpriced_calls),
    ]
}

/// The window line, the table `by` asks for, and a totals line.
fn write_report(out: &mut impl Write, spending: &Spending, by: CostBy) -> std::io::Result<()> {
    let window = match (&spending.since, &spending.run) {
        (Some(since), Some(run)) => format!("run {run}, stages finished since {since}"),
        (None, Some(run)) => format!("run {run}"),
        (Some(since), None) => format!("stages finished since {since}"),
        (None, None) => "all recorded stages".to_string(),
    };
    writeln!(out, "Spending of {window}")?;
    if spending.total.stages == 0 {
        return writeln!(out, "no language-model calls");
    }
    let (keys, rows): (Vec<&str>, Vec<Vec<String>>) = match by {
        CostBy::Day => (
            vec!["DAY"],
            spending
                .days
                .iter()
                .map(|d| row(vec![d.day.clone()], &d.spend))
                .collect(),
        ),
        CostBy::Model => (
            vec!["PROVIDER", "MODEL"],
            spending
                .models
                .iter()
                .map(|m| row(vec![m.provider.clone(), m.model.clone()], &m.spend))
                .collect(),
        ),
        CostBy::Run => (
            vec!["RUN", "WORKFLOW", "STATUS"],
            spending
                .runs
                .iter()
                .map(|r| {
                    let keys = vec![r.run_id.clone(), r.workflow_name.clone(), r.status.clone()];
                    row(keys, &r.spend)
                })
                .collect(),
        ),
        CostBy::Stage => (
            vec!["RUN", "STAGE", "MODEL", "FINISHED"],
            spending
                .stages
                .iter()
                .map(|s| {
                    let keys = vec![
                        s.run_id.clone(),
                        format!("{}@{}", s.node_id, s.visit),
                        s.model.clone(),
                        s.finished_at.clone(),
                    ];
                    row(keys, &s.spend)
                })
                .collect(),
        ),
    };
    let mut header: Vec<String> = keys.iter().map(|k| (*k).to_string()).collect();
    header.extend(FIGURE_HEADER.iter().map(|h| (*h).to_string()));
    let mut total = vec![String::new(); keys.len()];
    if let Some(first) = total.first_mut() {
        *first = "TOTAL".to_string();
    }
    total.extend(figure_cells(&spending.total));
    write_table(out, &header, &rows, &total, keys.len())?;
    let listed = match by {
        CostBy::Run => Some((spending.runs.len() as u64, spending.runs_total, "runs")),
        CostBy::Stage => Some((
            spending.stages.len() as u64,
            spending.total.stages,
            "stages",
        )),
        CostBy::Day | CostBy::Model => None,
    };
    if let Some((shown, all, what)) = listed
        && shown < all
    {
        writeln!(
            out,
            "(the latest {shown} of {all} {what}; the total counts all; --limit shows more)"
        )?;
    }
    if spending.total.unpriced_calls > 0 {
        writeln!(
            out,
            "{} calls had no price (a model missing from the catalog): their tokens are counted, their cost is not",
            spending.total.unpriced_calls
        )?;
    }
    Ok(())
}

fn row(mut keys: Vec<String>, spend: &SpendFigures) -> Vec<String> {
    keys.extend(figure_cells(spend));
    keys
}

/// Columns padded to fit; figure columns (after `keys`) right-aligned;
/// the totals under a rule.
fn write_table(
    out: &mut impl Write,
    header: &[String],
    rows: &[Vec<String>],
    total: &[String],
    keys: usize,
) -> std::io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for line in rows.iter().chain(std::iter::once(&total.to_vec())) {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
            if i < keys {
                text.push_str(cell);
                text.push_str(&pad);
            } else {
                text.push_str(&pad);
                text.push_str(cell);
            }
        }
        text.trim_end().to_string()
    };
    writeln!(out, "{}", line(header))?;
    for cells in rows {
        writeln!(out, "{}", line(cells))?;
    }
    let rule: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    writeln!(out, "{}", "-".repeat(rule))?;
    writeln!(out, "{}", line(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DaySpend, ModelSpend};

    fn figures(stages: u64, cost: f64, unpriced_calls: u64) -> SpendFigures {
        SpendFigures {
            stages,
            calls: stages,
            input_tokens: 12_400,
            output_tokens: 950,
            cost,
            unpriced_calls,
        }
    }

    #[test]
    fn the_table_has_a_row_per_day_a_total_and_says_what_is_unpriced() {
        let spending = Spending {
            since: Some("2026-11-27T00:00:00.000Z".into()),
            run: None,
            total: figures(3, 1.5, 1),
            days: vec![
                DaySpend {
                    day: "2026-12-01".into(),
                    spend: figures(2, 1.5, 0),
                },
                DaySpend {
                    day: "2026-12-02".into(),
                    spend: figures(1, 0.0, 1),
                },
            ],
            models: vec![ModelSpend {
                provider: "anthropic".into(),
                model: "claude-sonnet-4-5".into(),
                spend: figures(3, 1.5, 1),
            }],
            runs: Vec::new(),
            runs_total: 0,
            stages: Vec::new(),
        };
        let mut out = Vec::new();
        write_report(&mut out, &spending, CostBy::Day).expect("write");
        let text = String::from_utf8(out).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Spending of stages finished since 2026-11-27T00:00:00.000Z"
        );
        assert_eq!(
            lines[1],
            "DAY         STAGES  CALLS     IN  OUT                COST"
        );
        assert_eq!(
            lines[2],
            "2026-12-01       2      2  12.4k  950               $1.50"
        );
        assert_eq!(
            lines[3],
            "2026-12-02       1      1  12.4k  950   unpriced (1 call)"
        );
        assert!(lines[4].starts_with("-----"));
        assert_eq!(
            lines[5],
            "TOTAL            3      3  12.4k  950  $1.50 + 1 unpriced"
        );
        assert!(lines[6].starts_with("1 calls had no price"), "{text}");
    }
}
