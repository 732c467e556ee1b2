//! What a run is, as every layer sees it: its lifecycle status, the line
//! that lists it, what it was started with (model choice, parent), and
//! what it spent.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A run's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted, not started (the daemon's queue).
    Queued,
    Running,
    /// Waiting on a human gate.
    Blocked,
    Succeeded,
    Failed,
    Cancelled,
    /// The process running it died; resumable.
    Interrupted,
}

impl RunStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::Blocked,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Interrupted,
    ];

    /// The snake_case name used in the database, events and the wire
    /// protocol (`queued`, `running`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Blocked => "blocked",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Reads a name written by [`RunStatus::as_str`], ignoring case and
    /// surrounding space (users type `--status Failed`).
    #[must_use]
    pub fn parse(text: &str) -> Option<RunStatus> {
        let text = text.trim();
        RunStatus::ALL
            .into_iter()
            .find(|status| status.as_str().eq_ignore_ascii_case(text))
    }

    /// Succeeded, failed or cancelled: this execution of the run is over
    /// (it has a finish time). Interrupted is not terminal: the process
    /// running it died. Whether a run can be resumed (cancelled and
    /// interrupted ones can) is the engine's rule, `engine::launch::resumable`.
    #[must_use]
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of `run.list`: a [`RunRecord`] without the bulky parts
/// (checkpoint, options, inputs); `run.get` has those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunSummary {
    pub id: String,
    pub workflow_name: String,
    pub workflow_path: Option<PathBuf>,
    pub goal: Option<String>,
    pub status: RunStatus,
    pub labels: Vec<String>,
    pub run_dir: PathBuf,
    pub work_dir: PathBuf,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub failure_reason: Option<String>,
    /// The last event's sequence number (0 before any event).
    pub last_seq: u64,
    pub node_count: u32,
    /// For a sub-workflow's child run, the stage it runs under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
    /// Where its commands run when not on the host: `docker IMAGE`
    /// (docs/sandbox.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sandbox: Option<String>,
    /// Language-model tokens and cost over its stages, when any called one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<RunSpend>,
    /// Archived by the user.
    #[serde(default)]
    pub archived: bool,
    /// The nodes whose latest visit failed (see [`RunRecord::failed_stages`]);
    /// absent when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<String>>", optional)]
    pub failed_stages: Vec<String>,
}

/// A run's language-model spend, summed over its committed stages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunSpend {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// US dollars, over the calls the catalog prices.
    pub cost: f64,
    /// Calls whose model has no price: their cost is not in `cost`.
    #[serde(default)]
    #[ts(as = "Option<u64>", optional)]
    pub unpriced_calls: u64,
}

/// The parent stage of a child run (a sub-workflow node's stage).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ParentLink {
    pub run_id: String,
    pub node_id: String,
    pub visit: u32,
}

/// The run-wide model, below node attributes and stylesheets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ModelChoice {
    /// A model id or alias (`--model`, `[run.model] name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A provider name (`--provider`, `[run.model] provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Tried in order when the model's provider is unavailable
    /// (`[run.model] fallbacks`): provider names, aliases or
    /// `provider/model`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
}

impl ModelChoice {
    /// True when nothing is chosen (defaults apply).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.provider.is_none() && self.fallbacks.is_empty()
    }
}

/// `[run.agent]`: defaults for every agent stage of a run, below the
/// node's own attributes of the same names (docs/agents.md). Every field
/// is optional; an absent one takes the agent's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct AgentDefaults {
    /// Model calls per stage, repair turns included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Model turns that ask for tools, per stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_rounds: Option<u32>,
    /// Tokens (input + output) a stage may spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stage_tokens: Option<u64>,
    /// Wall-clock time per stage, as a duration (`30m`, `90s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// `read-only`, `read-write` or `full` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    /// Who does the work: `api` (Weft's own agent, the default), `acp` or
    /// `cli` (an external agent; docs/agents.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

impl AgentDefaults {
    /// True when nothing is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == AgentDefaults::default()
    }
}

/// A run's spending limits (`--max-cost`, `--max-tokens`, `[run.budget]`,
/// the graph's `budget_max_cost` and `budget_max_tokens`; docs/llm.md).
/// Every field is optional; an absent limit does not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// US dollars the run may spend on models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Tokens (input + output) the run may spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The share of a limit at which the run warns once (default 0.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_at: Option<f64>,
}

/// The warning threshold when none is set.
pub const DEFAULT_WARN_AT: f64 = 0.8;

impl Budget {
    /// True when nothing is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Budget::default()
    }

    /// True when a limit applies (a `warn_at` alone limits nothing).
    #[must_use]
    pub fn limits(&self) -> bool {
        self.max_cost.is_some() || self.max_tokens.is_some()
    }

    /// Each field of `self`, else `other`'s.
    #[must_use]
    pub fn or(self, other: Budget) -> Budget {
        Budget {
            max_cost: self.max_cost.or(other.max_cost),
            max_tokens: self.max_tokens.or(other.max_tokens),
            warn_at: self.warn_at.or(other.warn_at),
        }
    }

    /// The warning threshold, as a share of the limit.
    #[must_use]
    pub fn warn_share(&self) -> f64 {
        self.warn_at.unwrap_or(DEFAULT_WARN_AT)
    }

    /// Refuses values no limit can have, naming the key.
    ///
    /// # Errors
    /// A cost that is not a positive finite number, zero tokens, or a
    /// `warn_at` outside (0, 1].
    pub fn check(&self) -> Result<(), String> {
        if let Some(cost) = self.max_cost
            && !(cost.is_finite() && cost > 0.0)
        {
            return Err(format!(
                "max_cost must be a positive number of dollars, not {cost}"
            ));
        }
        if self.max_tokens == Some(0) {
            return Err("max_tokens must be a positive number of tokens, not 0".into());
        }
        if let Some(share) = self.warn_at
            && !(share.is_finite() && share > 0.0 && share <= 1.0)
        {
            return Err(format!(
                "warn_at must be a share of the limit above 0 and at most 1 (0.8 is 80%), not {share}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn budget_values_outside_their_range_are_refused_naming_the_key() {
        assert!(Budget::default().check().is_ok());
        let bad_cost = Budget {
            max_cost: Some(-1.0),
            ..Budget::default()
        };
        assert!(bad_cost.check().unwrap_err().contains("max_cost"));
        let bad_tokens = Budget {
            max_tokens: Some(0),
            ..Budget::default()
        };
        assert!(bad_tokens.check().unwrap_err().contains("max_tokens"));
        let bad_share = Budget {
            warn_at: Some(1.5),
            ..Budget::default()
        };
        assert!(bad_share.check().unwrap_err().contains("warn_at"));
    }

    #[test]
    fn flags_take_precedence_field_by_field() {
        let flags = Budget {
            max_cost: Some(5.0),
            ..Budget::default()
        };
        let file = Budget {
            max_cost: Some(1.0),
            max_tokens: Some(100),
            warn_at: None,
        };
        let both = flags.or(file);
        assert_eq!(both.max_cost, Some(5.0));
        assert_eq!(both.max_tokens, Some(100));
    }
}
