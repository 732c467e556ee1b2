//! Spending limits (docs/llm.md, "Budgets"): before every model call a
//! stage asks [`check`] whether the run may spend more. The run's recorded
//! spend (its committed stages, from the database) plus what the calling
//! stage has spent so far is held against the run's budget and the home's
//! per-day limits. Past the warning share, a `budget.warning` event, once
//! per limit; at a limit, the run pauses on a question like a human gate
//! ("raise by … / stop the run"), which a timeout answers with stop.
//! Stopping cancels the run, which `weft resume --max-cost …` continues.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::StageCx;
use super::ask::Asked;
use crate::engine::interviewer::{Answer, Choice, Question};
use crate::exec::cancel::{Cancel, CancelReason};
use crate::model::spend::{dollars, tokens};
use crate::model::{Budget, EventKind, FailureClass, Outcome, RunSpend, Spend};
use crate::store::{QuestionRecord, QuestionStatus};
use crate::util::lock::lock;

/// How long a paused run waits for an answer when settings.toml does not
/// say.
const DEFAULT_PAUSE_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// settings.toml, as far as budgets go.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct BudgetSettings {
    #[serde(default)]
    pub budget: BudgetSection,
}

/// `[budget]` of settings.toml: defaults for every run of the home.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct BudgetSection {
    pub max_cost_per_run: Option<f64>,
    pub max_tokens_per_run: Option<u64>,
    pub max_cost_per_day: Option<f64>,
    pub max_tokens_per_day: Option<u64>,
    pub warn_at: Option<f64>,
    /// How long a run paused at its budget waits (`30m`, `1h`).
    pub pause_timeout: Option<String>,
}

impl BudgetSettings {
    /// Reads `[budget]` of the settings file; a missing file or section
    /// sets no limits.
    ///
    /// # Errors
    /// An unreadable file or a value out of range, naming the key.
    pub fn load(path: &std::path::Path) -> Result<BudgetSettings, String> {
        let Some(text) = crate::config::read(path)? else {
            return Ok(BudgetSettings::default());
        };
        let (settings, _): (BudgetSettings, _) =
            crate::config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        settings
            .check()
            .map_err(|e| format!("{}: [budget] {e}", path.display()))?;
        Ok(settings)
    }

    fn check(&self) -> Result<(), String> {
        let b = &self.budget;
        let rename = |e: String, suffix: &str| {
            e.replacen("max_cost", &format!("max_cost_{suffix}"), 1)
                .replacen("max_tokens", &format!("max_tokens_{suffix}"), 1)
        };
        self.per_run().check().map_err(|e| rename(e, "per_run"))?;
        self.per_day().check().map_err(|e| rename(e, "per_day"))?;
        if let Some(t) = &b.pause_timeout {
            pause_timeout(t)?;
        }
        Ok(())
    }

    /// The per-run defaults.
    #[must_use]
    pub fn per_run(&self) -> Budget {
        Budget {
            max_cost: self.budget.max_cost_per_run,
            max_tokens: self.budget.max_tokens_per_run,
            warn_at: self.budget.warn_at,
        }
    }

    /// The limits over every run of the home, per local day.
    #[must_use]
    pub fn per_day(&self) -> Budget {
        Budget {
            max_cost: self.budget.max_cost_per_day,
            max_tokens: self.budget.max_tokens_per_day,
            warn_at: self.budget.warn_at,
        }
    }

    fn pause_timeout(&self) -> Duration {
        self.budget
            .pause_timeout
            .as_deref()
            .and_then(|t| pause_timeout(t).ok())
            .unwrap_or(DEFAULT_PAUSE_TIMEOUT)
    }
}

fn pause_timeout(text: &str) -> Result<Duration, String> {
    crate::lang::value::Duration::parse(text)
        .map(crate::lang::value::Duration::to_std)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("pause_timeout = \"{text}\" is not a duration (write e.g. \"1h\")"))
}

/// The run's limits as they stand (raised ones included) and which
/// warnings it has given; shared by its stages, and by the child runs of
/// its sub-workflows: a workflow made of sub-workflows stays within the
/// budget of the run that was started.
#[derive(Clone, Default)]
pub struct RunBudget {
    limits: Arc<Mutex<Limits>>,
    /// Stops the whole run at its budget (not only the branch or child run
    /// that asked).
    cancel: Cancel,
    /// The run the limits belong to: its spend and its descendants' counts.
    root: Arc<str>,
}

#[derive(Default)]
struct Limits {
    run: Budget,
    day: Budget,
    pause_timeout: Duration,
    /// Limits warned about, by [`Reading::key`], at the limit's value.
    warned: Vec<(&'static str, f64)>,
    /// Models without a price, named once each.
    unpriced: Vec<String>,
}

impl std::fmt::Debug for RunBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunBudget").finish_non_exhaustive()
    }
}

impl RunBudget {
    /// The budget of run `run_id` (`run`, already resolved from flags, run
    /// configuration and graph) over the home's settings; a stop at the
    /// budget cancels `cancel`, the whole run's.
    #[must_use]
    pub(crate) fn new(
        run_id: &str,
        run: Budget,
        settings: &BudgetSettings,
        cancel: Cancel,
    ) -> RunBudget {
        RunBudget {
            limits: Arc::new(Mutex::new(Limits {
                run: run.or(settings.per_run()),
                day: settings.per_day(),
                pause_timeout: settings.pause_timeout(),
                warned: Vec::new(),
                unpriced: Vec::new(),
            })),
            cancel,
            root: Arc::from(run_id),
        }
    }

    /// True the first time `model` is named: its calls have no price.
    fn first_unpriced(&self, model: &str) -> bool {
        let mut limits = lock(&self.limits);
        // Without a limit, an unknown price changes nothing.
        if !(limits.run.limits() || limits.day.limits())
            || limits.unpriced.iter().any(|m| m == model)
            || limits.unpriced.len() >= 64
        {
            return false;
        }
        limits.unpriced.push(model.to_string());
        true
    }
}

/// One limit held against what was spent.
#[derive(Debug, Clone, PartialEq)]
struct Reading {
    /// `run.cost`, `run.tokens`, `day.cost`, `day.tokens`.
    key: &'static str,
    limit: f64,
    spent: f64,
}

impl Reading {
    fn is_cost(&self) -> bool {
        self.key.ends_with("cost")
    }

    fn per_day(&self) -> bool {
        self.key.starts_with("day")
    }

    fn show(&self, amount: f64) -> String {
        if self.is_cost() {
            dollars(amount)
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let n = amount.max(0.0) as u64;
            format!("{} tokens", tokens(n))
        }
    }

    fn name(&self) -> &'static str {
        if self.per_day() {
            "Daily budget"
        } else {
            "Budget"
        }
    }
}

/// The limits of `budget` with what was spent against each.
fn readings(key: &'static str, budget: &Budget, cost: f64, token_count: u64) -> Vec<Reading> {
    let mut out = Vec::new();
    if let Some(limit) = budget.max_cost {
        out.push(Reading {
            key: if key == "run" { "run.cost" } else { "day.cost" },
            limit,
            spent: cost,
        });
    }
    if let Some(limit) = budget.max_tokens {
        #[allow(clippy::cast_precision_loss)]
        out.push(Reading {
            key: if key == "run" {
                "run.tokens"
            } else {
                "day.tokens"
            },
            limit: limit as f64,
            spent: token_count as f64,
        });
    }
    out
}

fn total(spend: &RunSpend) -> u64 {
    spend.input_tokens.saturating_add(spend.output_tokens)
}

/// Says once per run and model that a model's calls have no price: the
/// stage calls it after every call whose cost is unknown.
pub(super) fn note_unpriced(cx: &StageCx<'_>, model: &str, cost: Option<f64>) {
    if cost.is_none() && cx.run.budget.first_unpriced(model) {
        cx.notice(format!(
            "model {model} has no price: its tokens count against the budget, its cost does not"
        ));
    }
}

/// Whether the stage may make another model call, having spent `in_flight`
/// so far: `Ok` to go on (after a warning, or after someone raised the
/// budget), or the stage's outcome when the run stops at its budget.
pub(super) async fn check(cx: &StageCx<'_>, in_flight: &Spend) -> Result<(), Outcome> {
    if cx.run.dry_run {
        return Ok(());
    }
    // Bounded: each round either returns or follows a raise, and a person
    // raises a limited number of times before the timeout stops the run.
    loop {
        let (run_budget, day_budget, timeout) = {
            let limits = lock(&cx.run.budget.limits);
            (limits.run, limits.day, limits.pause_timeout)
        };
        if !run_budget.limits() && !day_budget.limits() {
            return Ok(());
        }
        let (recorded, today, day_budget) = {
            let store = cx.recorder.store();
            // The run's own stages and those of its sub-workflows' child
            // runs (a sub-workflow stage does not count its child's spend
            // itself, so nothing is counted twice).
            let recorded = if run_budget.limits() {
                store.spend_of_tree(&cx.run.budget.root).unwrap_or_default()
            } else {
                RunSpend::default()
            };
            let (today, day_budget) = if day_budget.limits() {
                // A daily limit someone raised today holds for every run
                // of the home until midnight.
                let raised = store.day_budget().ok().flatten().unwrap_or_default();
                (
                    store.spend_today().unwrap_or_default(),
                    higher(day_budget, raised),
                )
            } else {
                (RunSpend::default(), day_budget)
            };
            (recorded, today, day_budget)
        };
        let flight_tokens = in_flight.usage.input.saturating_add(in_flight.usage.output);
        let mut all = readings(
            "run",
            &run_budget,
            recorded.cost + in_flight.cost,
            total(&recorded).saturating_add(flight_tokens),
        );
        all.extend(readings(
            "day",
            &day_budget,
            today.cost + in_flight.cost,
            total(&today).saturating_add(flight_tokens),
        ));
        if let Some(over) = all.iter().find(|r| r.spent >= r.limit) {
            pause(cx, over, timeout).await?;
            continue;
        }
        for reading in &all {
            let share = if reading.per_day() {
                day_budget.warn_share()
            } else {
                run_budget.warn_share()
            };
            if reading.spent >= reading.limit * share {
                warn(cx, reading, share);
            }
        }
        return Ok(());
    }
}

/// The `budget.warning` of a limit, once per limit and value.
fn warn(cx: &StageCx<'_>, reading: &Reading, share: f64) {
    {
        let mut limits = lock(&cx.run.budget.limits);
        let seen = (reading.key, reading.limit);
        if limits.warned.contains(&seen) {
            return;
        }
        limits.warned.push(seen);
    }
    let _ = cx.recorder.emit(
        EventKind::BudgetWarning {
            limit: reading.key.to_string(),
            max: reading.limit,
            spent: reading.spent,
            message: format!(
                "{} {} spent of {} ({:.0}%, warning at {:.0}%)",
                reading.name(),
                reading.show(reading.spent),
                reading.show(reading.limit),
                reading.spent / reading.limit * 100.0,
                share * 100.0
            ),
        },
        cx.at(),
    );
}

/// Asks whether to raise the limit or stop; `Ok` once raised.
async fn pause(cx: &StageCx<'_>, over: &Reading, timeout: Duration) -> Result<(), Outcome> {
    let at = cx.at();
    let raise = format!("Raise by {}", over.show(over.limit));
    let text = format!(
        "{} of {} reached ({} spent): raise it, or stop the run (resumable)",
        over.name(),
        over.show(over.limit),
        over.show(over.spent)
    );
    let choice = |key: &str, text: &str| Choice {
        key: Some(key.to_string()),
        label: format!("[{key}] {text}"),
        text: text.to_string(),
        target: String::new(),
    };
    let choices = vec![choice("R", &raise), choice("S", "Stop the run")];
    let labels: Vec<String> = choices.iter().map(|c| c.label.clone()).collect();
    let pending = still_pending(cx, &labels);
    let question = Question {
        id: pending
            .clone()
            .unwrap_or_else(|| ulid::Ulid::generate().to_string()),
        node_id: cx.node.id.to_string(),
        text: text.clone(),
        context: None,
        choices,
        freeform: false,
        timeout_ms: u64::try_from(timeout.as_millis()).ok(),
        default_choice: None,
    };
    let record = QuestionRecord {
        id: question.id.clone(),
        run_id: cx.run.run_id.clone(),
        node_id: question.node_id.clone(),
        visit: cx.visit,
        text,
        options: labels,
        freeform: false,
        status: QuestionStatus::Pending,
        answer: None,
        asked_at: crate::store::timestamp(),
        answered_at: None,
        permission: None,
    };
    let new = pending.is_none().then_some(&record);
    let asked = super::ask::ask_recorded(cx, &question, new, Some(timeout)).await;
    let settle = |status: QuestionStatus, answer: serde_json::Value| {
        let _ = cx
            .recorder
            .store()
            .answer_question(&question.id, status, Some(&answer));
    };
    let completed = |selected: &str| {
        let _ = cx.recorder.emit(
            EventKind::InterviewCompleted {
                question_id: question.id.clone(),
                selected: selected.to_string(),
                text: None,
            },
            at,
        );
    };
    let why = match asked {
        Asked::Answer(Answer::Choice(0)) => {
            let label = question.choices[0].label.clone();
            settle(QuestionStatus::Answered, json!({ "choice": label }));
            completed(&label);
            raise_limit(cx, over);
            return Ok(());
        }
        Asked::Answer(Answer::Choice(_) | Answer::Freeform(_)) => {
            let label = question.choices[1].label.clone();
            settle(QuestionStatus::Answered, json!({ "choice": label }));
            completed(&label);
            format!(
                "stopped at its budget: {} of {} reached ({} spent)",
                over.name().to_lowercase(),
                over.show(over.limit),
                over.show(over.spent)
            )
        }
        Asked::Answer(Answer::Interrupted(reason)) => {
            settle(
                QuestionStatus::Interrupted,
                json!({ "interrupted": reason }),
            );
            let _ = cx.recorder.emit(
                EventKind::InterviewInterrupted {
                    question_id: question.id.clone(),
                    reason: reason.clone(),
                },
                at,
            );
            format!("budget question not answered: {reason}")
        }
        Asked::Answer(Answer::Skipped) => {
            settle(QuestionStatus::Interrupted, json!({ "skipped": true }));
            "budget question skipped: the run stops at its budget".to_string()
        }
        Asked::TimedOut(after) => {
            settle(QuestionStatus::TimedOut, json!(null));
            let _ = cx.recorder.emit(
                EventKind::InterviewTimeout {
                    question_id: question.id.clone(),
                    default_choice: None,
                },
                at,
            );
            format!(
                "stopped at its budget: {} of {} reached and no answer within {after}",
                over.name().to_lowercase(),
                over.show(over.limit)
            )
        }
        Asked::Cancelled(reason) => {
            settle(QuestionStatus::Interrupted, json!({ "cancelled": reason }));
            return Err(Outcome::failed(
                FailureClass::Canceled,
                format!("cancelled: {reason}"),
            ));
        }
    };
    // Cancelled, not failed: the run is resumable with a higher budget.
    cx.run.budget.cancel.cancel(CancelReason::User(why.clone()));
    Err(Outcome::failed(FailureClass::Canceled, why))
}

/// The id of this node's budget question left pending by a daemon that
/// stopped while the run waited on it, when it offers `labels`: asked
/// again under its own id, so an answer addressed to it (from the app or a
/// notification) still lands. A pending one that offers something else
/// (the limit changed meanwhile) is closed, so it does not wait forever in
/// the inbox.
fn still_pending(cx: &StageCx<'_>, labels: &[String]) -> Option<String> {
    let mut store = cx.recorder.store();
    let stale: Vec<QuestionRecord> = store
        .questions(Some(&cx.run.run_id), true)
        .ok()?
        .into_iter()
        // A budget question is the only kind an LLM stage asks besides an
        // external agent's permission requests.
        .filter(|q| *q.node_id == *cx.node.id && q.permission.is_none())
        .collect();
    let mut reused = None;
    for question in stale {
        if reused.is_none() && question.options == labels {
            reused = Some(question.id);
        } else {
            let _ = store.answer_question(
                &question.id,
                QuestionStatus::Interrupted,
                Some(&json!({ "interrupted": "the run was resumed" })),
            );
        }
    }
    reused
}

/// Raises the limit `over` by its own size (doubling it). A run's raised
/// budget is stored with the run that was started, so a resume keeps it; a
/// raised daily limit is stored for the day, so the home's other runs keep
/// it until midnight.
fn raise_limit(cx: &StageCx<'_>, over: &Reading) {
    let raised = over.limit * 2.0;
    let stored = {
        let mut limits = lock(&cx.run.budget.limits);
        let target = if over.per_day() {
            &mut limits.day
        } else {
            &mut limits.run
        };
        if over.is_cost() {
            target.max_cost = Some(raised);
        } else {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let count = raised as u64;
            target.max_tokens = Some(count);
        }
        *target
    };
    let mut store = cx.recorder.store();
    let _ = if over.per_day() {
        store.raise_day_budget(&stored)
    } else {
        store.set_budget(&cx.run.budget.root, &stored)
    };
    drop(store);
    cx.notice(format!(
        "{} raised to {}{}",
        over.name().to_lowercase(),
        over.show(raised),
        if over.per_day() { " for today" } else { "" }
    ));
}

/// `budget` with each of its limits raised to `raised`'s where that is
/// higher (a limit `budget` does not set stays unset).
fn higher(budget: Budget, raised: Budget) -> Budget {
    fn max<T: PartialOrd>(limit: Option<T>, raised: Option<T>) -> Option<T> {
        match (limit, raised) {
            (Some(limit), Some(raised)) if raised > limit => Some(raised),
            (limit, _) => limit,
        }
    }
    Budget {
        max_cost: max(budget.max_cost, raised.max_cost),
        max_tokens: max(budget.max_tokens, raised.max_tokens),
        warn_at: budget.warn_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_values_out_of_range_name_their_key() {
        let settings = BudgetSettings {
            budget: BudgetSection {
                max_cost_per_day: Some(0.0),
                ..BudgetSection::default()
            },
        };
        let error = settings.check().expect_err("zero dollars a day");
        assert!(error.contains("max_cost_per_day"), "{error}");
        let settings = BudgetSettings {
            budget: BudgetSection {
                pause_timeout: Some("soon".into()),
                ..BudgetSection::default()
            },
        };
        let error = settings.check().expect_err("not a duration");
        assert!(error.contains("pause_timeout"), "{error}");
    }

    #[test]
    fn run_limits_come_before_the_settings_defaults() {
        let settings = BudgetSettings {
            budget: BudgetSection {
                max_cost_per_run: Some(1.0),
                max_tokens_per_run: Some(10),
                ..BudgetSection::default()
            },
        };
        let budget = RunBudget::new(
            "01RUN",
            Budget {
                max_cost: Some(5.0),
                ..Budget::default()
            },
            &settings,
            Cancel::new(),
        );
        let limits = lock(&budget.limits);
        assert_eq!(limits.run.max_cost, Some(5.0));
        assert_eq!(limits.run.max_tokens, Some(10));
        assert_eq!(limits.pause_timeout, DEFAULT_PAUSE_TIMEOUT);
    }

    #[test]
    fn a_reading_shows_dollars_or_tokens() {
        let cost = Reading {
            key: "run.cost",
            limit: 5.0,
            spent: 5.02,
        };
        assert_eq!(cost.show(cost.limit), "$5.00");
        let count = Reading {
            key: "day.tokens",
            limit: 2_000_000.0,
            spent: 0.0,
        };
        assert_eq!(count.show(count.limit), "2.0M tokens");
        assert_eq!(count.name(), "Daily budget");
    }
}
