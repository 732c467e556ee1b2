//! Retros (execution/retros.mdx): after a run succeeds or fails, when
//! retros are enabled, Weft writes `retro.json` in the run directory and a
//! row of the `retros` table.
//!
//! Two layers: the figures Weft derives from the stages table (per stage
//! and for the run: durations, attempts, tokens, cost, files touched), and
//! the narrative of one language-model call given a bounded summary of the
//! run's record. The reply is checked against [`narrative_schema`] with
//! the same check and repair turns as a prompt node's `output_schema`.
//!
//! A retro never touches the run's status: it is made after the run's end
//! is recorded, within its time limit (settings.toml's `retro_timeout`,
//! [`DEFAULT_RETRO_TIMEOUT`] unless set); one whose narrative cannot be
//! produced (no model, a failed call, a reply still invalid after the
//! repairs, the time limit) is written with its figures and an `error`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::models::Models;
use super::output::{SchemaProblem, check_against};
use crate::llm::{Message, Request};
use crate::model::retro::{Narrative, RETRO_FILE, RetroStage, RetroTotals};
use crate::model::{LlmUsage, Outcome, Retro, RunStatus, Spend};
use crate::store::{RunDir, RunRecord, StageRecord, Store, StoreError};
use crate::util::lock::lock;
use crate::util::text::truncate;

/// How long the narrative may take, repair turns included, when
/// settings.toml's `retro_timeout` does not say.
pub const DEFAULT_RETRO_TIMEOUT: Duration = Duration::from_secs(180);

/// Repair turns after a reply that fails the schema.
const REPAIR_TURNS: u32 = 2;

/// Characters of the run summary sent to the model, and of each stage's
/// response within it.
const SUMMARY_BUDGET: usize = 24_000;
const RESPONSE_BUDGET: usize = 1_500;

/// Most stage visits listed in the summary (the rest are counted).
const MAX_STAGES_IN_SUMMARY: usize = 200;

/// The part of settings.toml retros read: `retros = true` makes a retro
/// for every run that does not say otherwise; `retro_timeout` bounds its
/// model call (`"3m"`, `"90s"`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RetroSettings {
    pub retros: bool,
    pub retro_timeout: Option<String>,
}

impl RetroSettings {
    /// Reads the retro keys of the settings file; a missing file means
    /// retros off and the default time limit.
    ///
    /// # Errors
    /// An unreadable or invalid file, or a `retro_timeout` that is not a
    /// duration, naming the file and the key.
    pub fn load(path: &Path) -> Result<RetroSettings, String> {
        let Some(text) = crate::config::read(path)? else {
            return Ok(RetroSettings::default());
        };
        let (settings, _): (RetroSettings, _) =
            crate::config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        settings
            .timeout()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(settings)
    }

    /// Whether a run makes a retro: its own choice (`--retro`,
    /// `--no-retro`, `[run] retros`), else `retros`, else not.
    #[must_use]
    pub fn enabled(&self, choice: Option<bool>) -> bool {
        choice.unwrap_or(self.retros)
    }

    /// How long the retro's model call may take, repairs included.
    ///
    /// # Errors
    /// A `retro_timeout` that is not a positive duration, naming the key.
    pub fn timeout(&self) -> Result<Duration, String> {
        let Some(text) = &self.retro_timeout else {
            return Ok(DEFAULT_RETRO_TIMEOUT);
        };
        crate::lang::value::Duration::parse(text)
            .map(crate::lang::value::Duration::to_std)
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                format!("retro_timeout = \"{text}\" is not a duration (write e.g. \"3m\")")
            })
    }
}

/// Makes the retro of run `run_id` (which has ended), its model call
/// bounded by `timeout`, writes retro.json into its run directory and
/// records it. Errs only when the store cannot be read or written; every
/// other problem is the retro's `error`.
pub(crate) async fn make(
    store: &Arc<Mutex<Store>>,
    run_id: &str,
    models: &Models,
    timeout: Duration,
) -> Result<Retro, StoreError> {
    let (run, stages) = {
        let store = lock(store);
        let run = store.find_run(run_id)?;
        let stages = store.stages(&run.id)?;
        (run, stages)
    };
    let (stage_rows, totals) = derive(&run, &stages);
    let summary = summary(&run, &stages, &stage_rows, &totals);
    let narrated = tokio::time::timeout(timeout, narrate(models, &summary)).await;
    let (narrative, llm, error) = match narrated {
        Ok(Ok((narrative, llm))) => (Some(narrative), llm, None),
        Ok(Err((why, llm))) => (None, llm, Some(why)),
        Err(_) => (
            None,
            None,
            Some(format!(
                "the retro's model call took longer than {}",
                crate::util::duration::setting(timeout)
            )),
        ),
    };
    let retro = Retro {
        run_id: run.id.clone(),
        workflow_name: run.workflow_name.clone(),
        run_status: run.status,
        created_at: crate::store::timestamp(),
        stages: stage_rows,
        totals,
        narrative,
        error,
        llm,
    };
    RunDir::open(&run.run_dir).write_json(RETRO_FILE, &retro)?;
    lock(store).save_retro(&retro)?;
    Ok(retro)
}

/// Whether a run that ended with `status` gets a retro: one that succeeded
/// or failed. A cancelled run may still be resumed (and the user stopped
/// it on purpose); an interrupted one has not ended.
#[must_use]
pub(crate) fn ends_with_retro(status: RunStatus) -> bool {
    matches!(status, RunStatus::Succeeded | RunStatus::Failed)
}

/// The one-line notice for a retro the run made.
#[must_use]
pub(crate) fn notice(retro: &Retro) -> String {
    match (&retro.narrative, &retro.error) {
        (Some(n), _) => format!(
            "retro written ({RETRO_FILE}): {}, {} friction point{}",
            n.smoothness.as_str(),
            n.friction_points.len(),
            if n.friction_points.len() == 1 {
                ""
            } else {
                "s"
            }
        ),
        (None, Some(why)) => {
            format!("retro written ({RETRO_FILE}) without its narrative: {why}")
        }
        (None, None) => format!("retro written ({RETRO_FILE})"),
    }
}

/// The quantitative layer: a row per committed stage visit, in run order,
/// and the run's totals.
fn derive(run: &RunRecord, stages: &[StageRecord]) -> (Vec<RetroStage>, RetroTotals) {
    let mut totals = RetroTotals {
        duration_ms: duration_of(run),
        ..RetroTotals::default()
    };
    let mut rows = Vec::new();
    for stage in stages {
        let outcome = stage
            .outcome
            .clone()
            .and_then(|o| serde_json::from_value::<Outcome>(o).ok());
        let spend = outcome
            .as_ref()
            .and_then(|o| o.llm.as_ref())
            .map_or_else(Spend::default, |l| l.spend);
        let files = outcome.map(|o| o.files_touched).unwrap_or_default();
        let tokens = spend.usage.input.saturating_add(spend.usage.output);
        let retries = stage.attempts.saturating_sub(1);
        totals.cost += spend.cost;
        totals.tokens = totals.tokens.saturating_add(tokens);
        totals.retries = totals.retries.saturating_add(retries);
        match stage.status.as_str() {
            "failed" => totals.stages_failed += 1,
            "running" | "interrupted" => {}
            _ => totals.stages_completed += 1,
        }
        totals.files_touched.extend(files.iter().cloned());
        rows.push(RetroStage {
            node_id: stage.node_id.clone(),
            visit: stage.visit,
            handler: stage.handler.clone(),
            status: stage.status.clone(),
            duration_ms: stage.duration_ms,
            attempts: stage.attempts,
            retries,
            cost: spend.cost,
            tokens,
            files_touched: files,
            failure_reason: stage.failure_reason.clone(),
        });
    }
    totals.files_touched.sort();
    totals.files_touched.dedup();
    (rows, totals)
}

/// From the run's start to its end, when both are recorded.
fn duration_of(run: &RunRecord) -> Option<u64> {
    let at = |t: Option<&str>| t.and_then(|t| humantime::parse_rfc3339_weak(t).ok());
    let (start, end) = (
        at(run.started_at.as_deref())?,
        at(run.finished_at.as_deref())?,
    );
    end.duration_since(start)
        .ok()
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What the model is told about the run, at most [`SUMMARY_BUDGET`]
/// characters: the run, a line per stage visit, then each stage's response
/// (prompt and agent stages write `response.md`) cut to
/// [`RESPONSE_BUDGET`].
fn summary(
    run: &RunRecord,
    stages: &[StageRecord],
    rows: &[RetroStage],
    totals: &RetroTotals,
) -> String {
    let mut text = format!(
        "Workflow: {}\nGoal: {}\nFinal status: {}{}\nDuration: {}\nTokens: {}, cost ${:.4}, retries {}\nStages completed: {}, failed: {}\nFiles touched: {}\n\nStages, in the order they ran:\n",
        run.workflow_name,
        run.goal.as_deref().unwrap_or("(none given)"),
        run.status,
        run.failure_reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        totals.duration_ms.map_or_else(
            || "unknown".to_string(),
            |ms| crate::util::duration::elapsed(Duration::from_millis(ms))
        ),
        totals.tokens,
        totals.cost,
        totals.retries,
        totals.stages_completed,
        totals.stages_failed,
        if totals.files_touched.is_empty() {
            "none".to_string()
        } else {
            totals.files_touched.join(", ")
        },
    );
    for row in rows.iter().take(MAX_STAGES_IN_SUMMARY) {
        text.push_str(&format!(
            "- {}@{} [{}] {}, {}, attempts {}, tokens {}{}{}\n",
            row.node_id,
            row.visit,
            row.handler,
            row.status,
            row.duration_ms.map_or_else(
                || "no duration".to_string(),
                |ms| crate::util::duration::elapsed(Duration::from_millis(ms))
            ),
            row.attempts,
            row.tokens,
            if row.files_touched.is_empty() {
                String::new()
            } else {
                format!(", files: {}", row.files_touched.join(", "))
            },
            row.failure_reason
                .as_deref()
                .map(|r| format!(", failure: {}", truncate(r, 300)))
                .unwrap_or_default(),
        ));
    }
    if rows.len() > MAX_STAGES_IN_SUMMARY {
        text.push_str(&format!(
            "- ... and {} more stage visits\n",
            rows.len() - MAX_STAGES_IN_SUMMARY
        ));
    }
    let dir = RunDir::open(&run.run_dir);
    for stage in stages {
        if text.chars().count() >= SUMMARY_BUDGET {
            break;
        }
        let path = dir
            .node_dir(&stage.node_id, stage.visit)
            .join("response.md");
        let Ok(response) = crate::limits::read_text_capped(&path, 64 * 1024) else {
            continue;
        };
        if response.trim().is_empty() {
            continue;
        }
        text.push_str(&format!(
            "\nResponse of {}@{}:\n{}\n",
            stage.node_id,
            stage.visit,
            truncate(response.trim(), RESPONSE_BUDGET)
        ));
    }
    truncate(&text, SUMMARY_BUDGET)
}

/// The JSON Schema the narrative must match.
#[must_use]
pub fn narrative_schema() -> Value {
    let text = |d: &str| json!({"type": "string", "minLength": 1, "description": d});
    json!({
        "type": "object",
        "required": ["smoothness", "intent", "outcome", "learnings", "friction_points", "open_items"],
        "properties": {
            "smoothness": {"enum": crate::model::Smoothness::NAMES},
            "intent": text("what the run set out to do"),
            "outcome": text("what actually happened"),
            "learnings": {"type": "array", "maxItems": 20, "items": {
                "type": "object",
                "required": ["category", "text"],
                "properties": {
                    "category": {"enum": ["repo", "code", "workflow", "tool"]},
                    "text": text("what was learnt")
                }
            }},
            "friction_points": {"type": "array", "maxItems": 20, "items": {
                "type": "object",
                "required": ["kind", "description"],
                "properties": {
                    "kind": {"enum": ["retry", "timeout", "wrong_approach", "tool_failure", "ambiguity"]},
                    "description": text("where the run got stuck and why"),
                    "stage": {"type": "string"}
                }
            }},
            "open_items": {"type": "array", "maxItems": 20, "items": {
                "type": "object",
                "required": ["kind", "description"],
                "properties": {
                    "kind": {"enum": ["tech_debt", "follow_up", "investigation", "test_gap"]},
                    "description": text("the follow-up work")
                }
            }}
        }
    })
}

const INSTRUCTIONS: &str = "You write the retrospective of a finished workflow run. \
Read the run's record below and reply with one JSON object (it must be the last JSON object in your reply) with:\n\
- smoothness: effortless (goal reached first try, no retries), smooth (1-2 retries or a brief wrong turn), \
bumpy (notable friction, several retries or a dead end), struggled (reached only with difficulty), \
failed (the goal was not reached);\n\
- intent: what the run set out to do; outcome: what actually happened;\n\
- learnings: [{category: repo|code|workflow|tool, text}];\n\
- friction_points: [{kind: retry|timeout|wrong_approach|tool_failure|ambiguity, description, stage (a node id, optional)}];\n\
- open_items: [{kind: tech_debt|follow_up|investigation|test_gap, description}].\n\
Lists may be empty. Be brief and concrete.";

/// One call (and its repair turns) for the narrative. The error says why
/// there is none; both carry what the calls spent.
async fn narrate(
    models: &Models,
    summary: &str,
) -> Result<(Narrative, Option<LlmUsage>), (String, Option<LlmUsage>)> {
    let client = models
        .client()
        .map_err(|e| (format!("no language model for the retro: {e}"), None))?;
    let choice = models.choice();
    let mut request = Request {
        model: choice.model.clone(),
        provider: choice.provider.clone(),
        system: Some(INSTRUCTIONS.to_string()),
        messages: vec![Message::user(format!("The run's record:\n\n{summary}"))],
        ..Request::default()
    };
    let schema = narrative_schema();
    let mut spend = Spend::default();
    let mut last: Option<(String, String)> = None;
    let usage = |last: &Option<(String, String)>, spend: &Spend| {
        last.as_ref().map(|(provider, model)| LlmUsage {
            provider: provider.clone(),
            model: model.clone(),
            spend: *spend,
        })
    };
    let mut repaired = 0u32;
    loop {
        let completion = match client.complete(&request, |_| {}).await {
            Ok(c) => c,
            Err(e) => {
                return Err((
                    format!("the retro's model call failed: {e}"),
                    usage(&last, &spend),
                ));
            }
        };
        spend.add_call(completion.response.usage, completion.cost);
        last = Some((
            completion.target.provider.clone(),
            completion.target.model.clone(),
        ));
        let reply = completion.response.text();
        let problem = match check_against(&schema, "the retro schema", &reply, "the reply has") {
            Ok(value) => match serde_json::from_value::<Narrative>(value) {
                Ok(narrative) => return Ok((narrative, usage(&last, &spend))),
                Err(e) => format!("the reply does not read as a retro: {e}"),
            },
            Err(SchemaProblem::Schema(why)) => return Err((why, usage(&last, &spend))),
            Err(SchemaProblem::Invalid(why)) => why,
        };
        if repaired >= REPAIR_TURNS {
            return Err((
                format!("the reply was still invalid after {repaired} repair turn(s): {problem}"),
                usage(&last, &spend),
            ));
        }
        repaired += 1;
        request.messages.push(Message::assistant(reply));
        request
            .messages
            .push(Message::user(super::handlers::repair_message(&problem)));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn the_schema_accepts_a_full_narrative_and_names_a_bad_rating() {
        let good = r#"Here: {"smoothness": "smooth", "intent": "i", "outcome": "o",
            "learnings": [{"category": "repo", "text": "t"}],
            "friction_points": [{"kind": "retry", "description": "d", "stage": "build"}],
            "open_items": []}"#;
        let value = check_against(&narrative_schema(), "s", good, "it has").expect("valid");
        let narrative: Narrative = serde_json::from_value(value).expect("reads");
        assert_eq!(narrative.friction_points[0].stage.as_deref(), Some("build"));
        let bad = good.replace("\"smooth\"", "\"fine\"");
        let Err(SchemaProblem::Invalid(why)) = check_against(&narrative_schema(), "s", &bad, "it")
        else {
            panic!("a rating outside the scale is invalid");
        };
        assert!(why.contains("smoothness"), "{why}");
    }

    #[test]
    fn only_runs_that_succeeded_or_failed_get_a_retro() {
        assert!(ends_with_retro(RunStatus::Succeeded));
        assert!(ends_with_retro(RunStatus::Failed));
        assert!(!ends_with_retro(RunStatus::Cancelled));
        assert!(!ends_with_retro(RunStatus::Interrupted));
    }

    #[test]
    fn the_runs_choice_wins_over_settings_which_default_to_off() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.toml");
        let enabled = |choice| RetroSettings::load(&path).expect("loads").enabled(choice);
        assert!(!enabled(None), "no settings file: off");
        std::fs::write(&path, "retros = true\n").expect("write");
        assert!(enabled(None));
        assert!(!enabled(Some(false)), "--no-retro wins");
        std::fs::write(&path, "max_concurrent_runs = 2\n").expect("write");
        assert!(!enabled(None));
        assert!(enabled(Some(true)), "--retro wins");
    }

    #[test]
    fn the_time_limit_is_three_minutes_unless_settings_name_a_duration() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.toml");
        let timeout = || RetroSettings::load(&path).and_then(|s| s.timeout());
        assert_eq!(timeout(), Ok(Duration::from_secs(180)), "no settings file");
        std::fs::write(&path, "retros = true\nretro_timeout = \"90s\"\n").expect("write");
        assert_eq!(timeout(), Ok(Duration::from_secs(90)));
        std::fs::write(&path, "retro_timeout = \"10m\"\n").expect("write");
        assert_eq!(timeout(), Ok(Duration::from_secs(600)));
        for bad in ["\"soon\"", "\"0s\"", "\"-1m\"", "180"] {
            std::fs::write(&path, format!("retro_timeout = {bad}\n")).expect("write");
            let error = RetroSettings::load(&path).expect_err(bad);
            assert!(
                error.contains("retro_timeout") && error.contains("settings.toml"),
                "{bad}: {error}"
            );
        }
    }
}
