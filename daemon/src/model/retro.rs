//! A run's retrospective (execution/retros.mdx): the figures Weft computes
//! from the run's record, and the narrative one language-model call adds
//! (a rating, what the run meant to do and did, learnings, friction, open
//! items). `retro.json` in the run directory and the `retros` table hold it.

use serde::{Deserialize, Serialize};

/// The file a retro is written to, in the run directory.
pub const RETRO_FILE: &str = "retro.json";

/// A retro as written to `retro.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Retro {
    pub run_id: String,
    pub workflow_name: String,
    /// The run's final status (`succeeded` or `failed`).
    pub run_status: super::RunStatus,
    /// RFC 3339 UTC, when the retro was made.
    pub created_at: String,
    pub stages: Vec<RetroStage>,
    pub totals: RetroTotals,
    /// The narrative layer; absent when it could not be produced (then
    /// `error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrative: Option<Narrative>,
    /// Why the narrative is missing: no model, a failed call, a reply that
    /// stayed invalid after the repair turns, the time limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The model that wrote the narrative, and what the call cost (repair
    /// turns included); absent when no call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<super::LlmUsage>,
}

impl Retro {
    /// The rating, when the narrative exists.
    #[must_use]
    pub fn smoothness(&self) -> Option<Smoothness> {
        self.narrative.as_ref().map(|n| n.smoothness)
    }

    /// How many friction points the narrative names (0 without one).
    #[must_use]
    pub fn friction_count(&self) -> usize {
        self.narrative
            .as_ref()
            .map_or(0, |n| n.friction_points.len())
    }
}

/// One stage visit, from the stages table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RetroStage {
    pub node_id: String,
    pub visit: u32,
    pub handler: String,
    pub status: String,
    pub duration_ms: Option<u64>,
    /// Attempts made (retries are attempts beyond the first).
    pub attempts: u32,
    pub retries: u32,
    /// US dollars over the calls the catalog prices.
    pub cost: f64,
    /// Input plus output tokens.
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub files_touched: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// The run as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RetroTotals {
    /// From the run's start to its end.
    pub duration_ms: Option<u64>,
    pub cost: f64,
    pub tokens: u64,
    pub retries: u32,
    /// Every file any stage wrote, sorted, once each.
    #[ts(as = "Vec<String>")]
    pub files_touched: Vec<String>,
    pub stages_completed: u32,
    pub stages_failed: u32,
}

/// How smoothly the run went, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Smoothness {
    Effortless,
    Smooth,
    Bumpy,
    Struggled,
    Failed,
}

impl Smoothness {
    /// The names, best first, as written in JSON.
    pub const NAMES: [&'static str; 5] = ["effortless", "smooth", "bumpy", "struggled", "failed"];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Smoothness::Effortless => "effortless",
            Smoothness::Smooth => "smooth",
            Smoothness::Bumpy => "bumpy",
            Smoothness::Struggled => "struggled",
            Smoothness::Failed => "failed",
        }
    }
}

/// The language model's reading of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Narrative {
    pub smoothness: Smoothness,
    /// What the run set out to do.
    pub intent: String,
    /// What actually happened.
    pub outcome: String,
    #[serde(default)]
    pub learnings: Vec<Learning>,
    #[serde(default)]
    pub friction_points: Vec<FrictionPoint>,
    #[serde(default)]
    pub open_items: Vec<OpenItem>,
}

/// Something discovered during the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct Learning {
    /// `repo`, `code`, `workflow` or `tool`.
    pub category: String,
    pub text: String,
}

/// Where the run got stuck.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct FrictionPoint {
    /// `retry`, `timeout`, `wrong_approach`, `tool_failure` or `ambiguity`.
    pub kind: String,
    pub description: String,
    /// The stage (node id) it happened in, when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

/// Follow-up work the run revealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct OpenItem {
    /// `tech_debt`, `follow_up`, `investigation` or `test_gap`.
    pub kind: String,
    pub description: String,
}

/// One line of the retros list: what the `retros` table keeps beside the
/// whole retro, enough to list them without reading files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RetroSummary {
    pub run_id: String,
    pub workflow_name: String,
    pub run_status: super::RunStatus,
    pub created_at: String,
    /// Absent when the narrative could not be produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothness: Option<Smoothness>,
    pub friction_count: u32,
    pub duration_ms: Option<u64>,
    pub cost: f64,
    pub tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RetroSummary {
    /// The list line of `retro`.
    #[must_use]
    pub fn of(retro: &Retro) -> RetroSummary {
        RetroSummary {
            run_id: retro.run_id.clone(),
            workflow_name: retro.workflow_name.clone(),
            run_status: retro.run_status,
            created_at: retro.created_at.clone(),
            smoothness: retro.smoothness(),
            friction_count: u32::try_from(retro.friction_count()).unwrap_or(u32::MAX),
            duration_ms: retro.totals.duration_ms,
            cost: retro.totals.cost,
            tokens: retro.totals.tokens,
            error: retro.error.clone(),
        }
    }
}
