//! Language-model spending over time, summed by SQL from the committed
//! stages' outcomes (`outcome.llm`): in all, per day, per model, per run
//! and per stage. `weft cost` and the app's Spending view both read it
//! through [`crate::views::Views::spending`], so they show the same figures.
//!
//! A stage's spend counts on the day it finished (local date) and under the
//! model that answered its last call. A stage still running has committed
//! nothing yet, so it is not counted until it completes.

use std::time::SystemTime;

use rusqlite::params;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{Result, Store, StoreError, timestamp_of};

/// The most runs and stages a [`Spending`] lists (its totals count all).
pub const SPENDING_ROWS_MAX: u32 = 1_000;

/// The most days a [`Spending`] lists (the latest ones).
pub const SPENDING_DAYS_MAX: u32 = 400;

/// What to sum: a window and, optionally, one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SpendingQuery {
    /// Only stages that finished at or after this: a span back from now
    /// (`7d`, `24h`, `2w`), a local date (`2026-12-01`, from its midnight)
    /// or an RFC 3339 time; absent for all time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub since: Option<String>,
    /// Only this run (an id or unique prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub run: Option<String>,
    /// How many runs and stages to list, each (default 100, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub limit: Option<u32>,
}

/// Calls, tokens and dollars summed over some stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, TS)]
pub struct SpendFigures {
    /// Stages that called a model.
    pub stages: u64,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// US dollars over the priced calls only.
    pub cost: f64,
    /// Calls whose model has no price (a custom model): their tokens are
    /// counted, their cost is unknown and NOT in `cost`. A local model is
    /// priced at zero, so it is not unpriced.
    pub unpriced_calls: u64,
}

/// One local day's spending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct DaySpend {
    /// `YYYY-MM-DD`, the local date the stages finished.
    pub day: String,
    #[serde(flatten)]
    pub spend: SpendFigures,
}

/// One model's spending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ModelSpend {
    pub provider: String,
    pub model: String,
    #[serde(flatten)]
    pub spend: SpendFigures,
}

/// One run's spending in the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct RunSpendLine {
    pub run_id: String,
    pub workflow_name: String,
    pub status: String,
    pub created_at: String,
    #[serde(flatten)]
    pub spend: SpendFigures,
}

/// One stage visit's spending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StageSpend {
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
    /// The model that answered the stage's last call.
    pub provider: String,
    pub model: String,
    pub finished_at: String,
    #[serde(flatten)]
    pub spend: SpendFigures,
}

/// Spending in a window, in all and broken down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Spending {
    /// The window's start as an RFC 3339 UTC time; absent for all time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub since: Option<String>,
    /// The run summed, when one was asked for (its full id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub run: Option<String>,
    pub total: SpendFigures,
    /// Oldest first; only days with spending (at most 400, the latest).
    pub days: Vec<DaySpend>,
    /// Most expensive first (then most tokens).
    pub models: Vec<ModelSpend>,
    /// Newest run first, at most `limit`.
    pub runs: Vec<RunSpendLine>,
    /// How many runs spent in the window (`runs` may list fewer).
    pub runs_total: u64,
    /// Latest finished first, at most `limit`.
    pub stages: Vec<StageSpend>,
}

/// The window start `spec` names, as an RFC 3339 UTC time (see
/// [`SpendingQuery::since`]); `now` anchors the spans.
fn resolve_since(conn: &rusqlite::Connection, spec: &str, now: SystemTime) -> Result<String> {
    let spec = spec.trim();
    let invalid = || StoreError::InvalidSince(spec.chars().take(80).collect());
    if spec.len() > 40 {
        return Err(invalid());
    }
    if let Ok(span) = humantime::parse_duration(spec) {
        let start = now.checked_sub(span).unwrap_or(SystemTime::UNIX_EPOCH);
        return Ok(timestamp_of(start.max(SystemTime::UNIX_EPOCH)));
    }
    let is_date = spec.len() == 10
        && spec.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if is_date {
        // Local midnight in UTC, the way SQLite (and so the per-day
        // grouping) reads the local time zone.
        let utc: Option<String> = conn
            .prepare_cached("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?1, 'utc')")?
            .query_row([spec], |row| row.get(0))?;
        return utc.ok_or_else(invalid);
    }
    humantime::parse_rfc3339_weak(spec)
        .map(timestamp_of)
        .map_err(|_| invalid())
}

/// The spend columns summed by every query, in [`figures`]'s order.
const FIGURES: &str = "count(*), coalesce(sum(calls), 0), coalesce(sum(input), 0), \
     coalesce(sum(output), 0), total(cost), coalesce(sum(unpriced), 0)";

/// The stages that spent, with their spend pulled out of the outcome JSON:
/// those finished at or after `?1`, of run `?2` when it is not NULL.
const SPENT: &str = "WITH spent AS (\
     SELECT s.run_id, s.node_id, s.visit, s.finished_at, \
       coalesce(json_extract(s.outcome, '$.llm.provider'), '') AS provider, \
       coalesce(json_extract(s.outcome, '$.llm.model'), '') AS model, \
       coalesce(json_extract(s.outcome, '$.llm.calls'), 0) AS calls, \
       coalesce(json_extract(s.outcome, '$.llm.usage.input'), 0) AS input, \
       coalesce(json_extract(s.outcome, '$.llm.usage.output'), 0) AS output, \
       coalesce(json_extract(s.outcome, '$.llm.cost'), 0.0) AS cost, \
       coalesce(json_extract(s.outcome, '$.llm.unpriced_calls'), 0) AS unpriced \
     FROM stages s \
     WHERE s.finished_at >= ?1 AND (?2 IS NULL OR s.run_id = ?2) \
       AND json_extract(s.outcome, '$.llm') IS NOT NULL) ";

/// Reads [`FIGURES`] starting at column `at`.
fn figures(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<SpendFigures> {
    let count = |i: usize| -> rusqlite::Result<u64> {
        Ok(u64::try_from(row.get::<_, i64>(at + i)?).unwrap_or(0))
    };
    Ok(SpendFigures {
        stages: count(0)?,
        calls: count(1)?,
        input_tokens: count(2)?,
        output_tokens: count(3)?,
        cost: row.get::<_, f64>(at + 4)?.max(0.0),
        unpriced_calls: count(5)?,
    })
}

/// Spending of a home with no database yet: nothing, over the window
/// `since` names (checked as [`Store::spending`] checks it).
pub(crate) fn no_spending(since: Option<&str>, now: SystemTime) -> Result<Spending> {
    let since = match since {
        Some(spec) => Some(resolve_since(
            &rusqlite::Connection::open_in_memory()?,
            spec,
            now,
        )?),
        None => None,
    };
    Ok(Spending {
        since,
        run: None,
        total: SpendFigures::default(),
        days: Vec::new(),
        models: Vec::new(),
        runs: Vec::new(),
        runs_total: 0,
        stages: Vec::new(),
    })
}

impl Store {
    /// Spending over the window of `query` (call it inside one snapshot
    /// for consistent figures); `run` is a full run id. Rejects a `since`
    /// it cannot read with [`StoreError::InvalidSince`].
    pub(crate) fn spending(
        &self,
        since: Option<&str>,
        run: Option<&str>,
        limit: Option<u32>,
        now: SystemTime,
    ) -> Result<Spending> {
        let since = since
            .map(|spec| resolve_since(&self.conn, spec, now))
            .transpose()?;
        let from = since.as_deref().unwrap_or("");
        let limit = limit.unwrap_or(100).min(SPENDING_ROWS_MAX);
        let total = self
            .conn
            .prepare_cached(&format!("{SPENT} SELECT {FIGURES} FROM spent"))?
            .query_row(params![from, run], |row| figures(row, 0))?;
        let mut days: Vec<DaySpend> = self
            .conn
            .prepare_cached(&format!(
                "{SPENT} SELECT date(finished_at, 'localtime') AS day, {FIGURES} FROM spent \
                 GROUP BY day ORDER BY day DESC LIMIT ?3"
            ))?
            .query_map(params![from, run, SPENDING_DAYS_MAX], |row| {
                Ok(DaySpend {
                    day: row.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    spend: figures(row, 1)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        days.reverse();
        let models = self
            .conn
            .prepare_cached(&format!(
                "{SPENT} SELECT provider, model, {FIGURES} FROM spent GROUP BY provider, model \
                 ORDER BY total(cost) DESC, sum(input) + sum(output) DESC, provider, model"
            ))?
            .query_map(params![from, run], |row| {
                Ok(ModelSpend {
                    provider: row.get(0)?,
                    model: row.get(1)?,
                    spend: figures(row, 2)?,
                })
            })?
            .take(usize::try_from(SPENDING_ROWS_MAX).unwrap_or(usize::MAX))
            .collect::<rusqlite::Result<_>>()?;
        let runs_total: i64 = self
            .conn
            .prepare_cached(&format!("{SPENT} SELECT count(DISTINCT run_id) FROM spent"))?
            .query_row(params![from, run], |row| row.get(0))?;
        let runs = self
            .conn
            .prepare_cached(&format!(
                "{SPENT} SELECT spent.run_id, r.workflow_name, r.status, r.created_at, {FIGURES} \
                 FROM spent JOIN runs r ON r.id = spent.run_id GROUP BY spent.run_id \
                 ORDER BY r.created_at DESC, spent.run_id DESC LIMIT ?3"
            ))?
            .query_map(params![from, run, limit], |row| {
                Ok(RunSpendLine {
                    run_id: row.get(0)?,
                    workflow_name: row.get(1)?,
                    status: row.get(2)?,
                    created_at: row.get(3)?,
                    spend: figures(row, 4)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let stages = self
            .conn
            .prepare_cached(&format!(
                "{SPENT} SELECT run_id, node_id, visit, provider, model, finished_at, {FIGURES} \
                 FROM spent GROUP BY run_id, node_id, visit \
                 ORDER BY finished_at DESC, run_id DESC, node_id, visit LIMIT ?3"
            ))?
            .query_map(params![from, run, limit], |row| {
                Ok(StageSpend {
                    run_id: row.get(0)?,
                    node_id: row.get(1)?,
                    visit: row.get(2)?,
                    provider: row.get(3)?,
                    model: row.get(4)?,
                    finished_at: row.get(5)?,
                    spend: figures(row, 6)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Spending {
            since,
            run: run.map(str::to_string),
            total,
            days,
            models,
            runs,
            runs_total: u64::try_from(runs_total).unwrap_or(0),
            stages,
        })
    }
}

/// Moves a committed stage's finish time (tests: stages on other days).
#[cfg(test)]
pub(crate) fn backdate_stage(store: &Store, run_id: &str, node_id: &str, finished_at: &str) {
    store
        .conn
        .execute(
            "UPDATE stages SET finished_at = ?3 WHERE run_id = ?1 AND node_id = ?2",
            params![run_id, node_id, finished_at],
        )
        .expect("backdate");
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::StageCommit;
    use crate::store::fixtures::{home, new_run};

    /// A committed stage whose outcome spent `llm` (none when `None`),
    /// finished at `finished_at` (noon UTC, so the same local date in
    /// every time zone a test machine uses).
    pub(crate) fn spent_stage(
        store: &mut Store,
        run_id: &str,
        node: &str,
        llm: Option<serde_json::Value>,
        finished_at: &str,
    ) {
        store
            .stage_started(run_id, node, 1, "prompt")
            .expect("started");
        let mut outcome = serde_json::json!({"status": "succeeded"});
        if let Some(llm) = llm {
            outcome["llm"] = llm;
        }
        store
            .commit_stage(&StageCommit {
                run_id,
                node_id: node,
                visit: 1,
                status: "succeeded",
                attempts: 1,
                duration_ms: 5,
                failure_reason: None,
                outcome,
                events: Vec::new(),
                checkpoint: "{}".into(),
                files: None,
            })
            .expect("commit");
        backdate_stage(store, run_id, node, finished_at);
    }

    /// `provider/model` spending `calls` calls, tokens in and out, and
    /// `cost` (`None`: every call unpriced).
    pub(crate) fn llm(
        provider: &str,
        model: &str,
        calls: u32,
        input: u64,
        output: u64,
        cost: Option<f64>,
    ) -> serde_json::Value {
        serde_json::json!({
            "provider": provider, "model": model, "calls": calls,
            "usage": {"input": input, "output": output, "reasoning": 0, "cache_read": 0, "cache_write": 0},
            "cost": cost.unwrap_or(0.0),
            "unpriced_calls": if cost.is_some() { 0 } else { calls },
        })
    }

    /// Two runs over three days and four models: priced, unpriced (a
    /// custom model), free (a local model), a stage without a model call
    /// and one still running.
    pub(crate) fn history(store: &mut Store) {
        store
            .create_run(&new_run(
                "R1",
                "ship",
                "ship it",
                "2026-11-30T09:00:00.000Z",
            ))
            .expect("R1");
        store
            .create_run(&new_run(
                "R2",
                "docs",
                "write docs",
                "2026-12-02T09:00:00.000Z",
            ))
            .expect("R2");
        let at = |day: &str| format!("2026-{day}T12:00:00.000Z");
        let sonnet = llm("anthropic", "claude-sonnet-4-5", 1, 1_000, 200, Some(0.01));
        spent_stage(store, "R1", "plan", Some(sonnet), &at("11-30"));
        let gpt = llm("openai", "gpt-5", 2, 3_000, 500, Some(0.05));
        spent_stage(store, "R1", "code", Some(gpt), &at("12-02"));
        spent_stage(store, "R1", "test", None, &at("12-02"));
        let custom = llm("custom", "in-house", 1, 400, 100, None);
        spent_stage(store, "R2", "review", Some(custom), &at("12-02"));
        let local = llm("ollama", "llama3", 3, 50, 20, Some(0.0));
        spent_stage(store, "R2", "summary", Some(local), &at("12-03"));
        store
            .stage_started("R2", "publish", 1, "prompt")
            .expect("still running");
    }

    fn now() -> SystemTime {
        humantime::parse_rfc3339("2026-12-03T18:00:00Z").expect("time")
    }

    #[test]
    fn a_run_s_tree_spend_counts_its_children_and_grandchildren_only() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        let at = "2026-12-02T12:00:00.000Z";
        for (id, parent) in [
            ("P", None),
            ("C", Some("P")),
            ("G", Some("C")),
            ("OTHER", None),
        ] {
            let mut run = new_run(id, "wf", "goal", at);
            if let Some(parent) = parent {
                run.options =
                    serde_json::json!({"parent": {"run_id": parent, "node_id": "sub", "visit": 1}});
            }
            store.create_run(&run).expect("create");
            let spent = llm("openai", "gpt-5", 1, 100, 10, Some(0.5));
            spent_stage(&mut store, id, "ask", Some(spent), at);
        }
        let tree = store.spend_of_tree("P").expect("tree");
        assert_eq!((tree.input_tokens, tree.output_tokens), (300, 30));
        assert!((tree.cost - 1.5).abs() < 1e-9, "{}", tree.cost);
        let child = store.spend_of_tree("C").expect("subtree");
        assert_eq!(child.input_tokens, 200, "a child's tree is below it");
        assert_eq!(
            store.spend_of_tree("NONE").expect("unknown").input_tokens,
            0
        );
    }

    #[test]
    fn a_raised_daily_limit_is_kept_for_the_day_and_raised_again_per_limit() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        assert_eq!(store.day_budget().expect("none yet"), None);
        let cost = crate::model::Budget {
            max_cost: Some(10.0),
            ..crate::model::Budget::default()
        };
        store.raise_day_budget(&cost).expect("raise cost");
        let tokens = crate::model::Budget {
            max_tokens: Some(4_000),
            ..crate::model::Budget::default()
        };
        store.raise_day_budget(&tokens).expect("raise tokens");
        let today = store.day_budget().expect("read").expect("raised today");
        assert_eq!(
            (today.max_cost, today.max_tokens),
            (Some(10.0), Some(4_000))
        );
    }

    #[test]
    fn spending_sums_every_stage_that_called_a_model_by_day_model_run_and_stage() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        history(&mut store);
        let all = store.spending(None, None, None, now()).expect("spending");
        assert_eq!(all.since, None);
        let total = all.total;
        assert_eq!((total.stages, total.calls), (4, 7));
        assert_eq!((total.input_tokens, total.output_tokens), (4_450, 820));
        assert!((total.cost - 0.06).abs() < 1e-9, "{}", total.cost);
        assert_eq!(
            total.unpriced_calls, 1,
            "the custom model's call has no price"
        );

        let days: Vec<(&str, u64, u64)> = all
            .days
            .iter()
            .map(|d| (d.day.as_str(), d.spend.stages, d.spend.unpriced_calls))
            .collect();
        assert_eq!(
            days,
            [
                ("2026-11-30", 1, 0),
                ("2026-12-02", 2, 1),
                ("2026-12-03", 1, 0)
            ],
            "oldest first, by the local date each stage finished"
        );

        let models: Vec<(&str, &str)> = all
            .models
            .iter()
            .map(|m| (m.provider.as_str(), m.model.as_str()))
            .collect();
        assert_eq!(
            models,
            [
                ("openai", "gpt-5"),
                ("anthropic", "claude-sonnet-4-5"),
                ("custom", "in-house"),
                ("ollama", "llama3"),
            ],
            "the most expensive first, then the most tokens"
        );
        let local = &all.models[3].spend;
        assert_eq!(
            (local.cost, local.unpriced_calls),
            (0.0, 0),
            "a local model is free, not unpriced"
        );

        let runs: Vec<(&str, u64, u64)> = all
            .runs
            .iter()
            .map(|r| (r.run_id.as_str(), r.spend.stages, r.spend.calls))
            .collect();
        assert_eq!(runs, [("R2", 2, 4), ("R1", 2, 3)], "newest run first");
        assert_eq!(all.runs_total, 2);
        assert_eq!(all.runs[1].workflow_name, "ship");

        let stages: Vec<String> = all
            .stages
            .iter()
            .map(|s| format!("{}/{}@{}", s.run_id, s.node_id, s.visit))
            .collect();
        assert_eq!(
            stages,
            ["R2/summary@1", "R2/review@1", "R1/code@1", "R1/plan@1"]
        );
        assert_eq!(all.stages[2].model, "gpt-5");
    }

    #[test]
    fn spending_is_counted_from_the_window_start_in_any_form() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        history(&mut store);
        let stages = |since: &str| {
            let spending = store.spending(Some(since), None, None, now()).expect(since);
            (spending.total.stages, spending.since.expect("resolved"))
        };
        assert_eq!(stages("24h"), (1, "2026-12-02T18:00:00.000Z".to_string()));
        assert_eq!(stages("2d").0, 3);
        assert_eq!(stages("7d").0, 4);
        assert_eq!(
            stages("2026-12-02T12:00:00Z").0,
            3,
            "a stage finished at the start counts"
        );
        assert_eq!(
            stages("2026-12-02").0,
            3,
            "a date counts from its local midnight"
        );
        for bad in ["yesterday", "2026-13-45x", "", "7 parsecs"] {
            let error = store.spending(Some(bad), None, None, now()).expect_err(bad);
            assert!(
                matches!(error, StoreError::InvalidSince(_)),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn one_run_and_a_row_limit_narrow_the_lists_but_not_the_totals() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        history(&mut store);
        let r1 = store.spending(None, Some("R1"), None, now()).expect("R1");
        assert_eq!(r1.run.as_deref(), Some("R1"));
        assert_eq!((r1.total.stages, r1.total.calls), (2, 3));
        assert!(r1.stages.iter().all(|s| s.run_id == "R1"));

        let cut = store.spending(None, None, Some(1), now()).expect("limit");
        assert_eq!((cut.runs.len(), cut.stages.len()), (1, 1));
        assert_eq!((cut.runs_total, cut.total.stages), (2, 4));
    }

    #[test]
    fn spending_of_ten_thousand_runs_stays_fast() {
        let (_temp, home) = home();
        let mut store = Store::open(&home).expect("open");
        store
            .in_transaction(|store| {
                for i in 0..10_000u32 {
                    let id = format!("01BULK{i:05}");
                    // One run an hour, back from 2026-12-03T12:00.
                    let at = humantime::parse_rfc3339("2026-12-03T12:00:00Z").expect("time")
                        - std::time::Duration::from_secs(3600 * u64::from(i));
                    let at = timestamp_of(at);
                    store.create_run(&new_run(&id, "bulk", "spend", &at))?;
                    for (rank, node) in ["plan", "code", "test"].into_iter().enumerate() {
                        let llm = llm("anthropic", "claude-sonnet-4-5", 2, 1_000, 100, Some(0.01));
                        let outcome = serde_json::json!({"status": "succeeded", "llm": llm});
                        store.conn.execute(
                            "INSERT INTO stages (run_id, node_id, visit, rank, handler, status, \
                             attempts, started_at, finished_at, outcome) \
                             VALUES (?1, ?2, 1, ?3, 'prompt', 'succeeded', 1, ?4, ?4, ?5)",
                            params![id, node, rank as i64 + 1, at, outcome.to_string()],
                        )?;
                    }
                }
                Ok(())
            })
            .expect("bulk insert");
        let started = std::time::Instant::now();
        let week = store.spending(Some("7d"), None, None, now()).expect("week");
        let week_took = started.elapsed();
        // From 2026-11-26T18:00 (7 days before `now`) to the last run at
        // 2026-12-03T12:00: 162 hours, both ends counted.
        assert_eq!(week.total.stages, 3 * 163);
        assert_eq!((week.runs.len(), week.runs_total), (100, 163));
        assert!(
            week_took.as_millis() < 500,
            "a week of 10,000 runs took {week_took:?}"
        );
        let started = std::time::Instant::now();
        let all = store.spending(None, None, None, now()).expect("all");
        let all_took = started.elapsed();
        assert_eq!(all.total.stages, 30_000);
        assert!(all.days.len() <= SPENDING_DAYS_MAX as usize);
        assert!(
            all_took.as_secs() < 5,
            "all 30,000 stages took {all_took:?}"
        );
    }
}
