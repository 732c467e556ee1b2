//! What a stage produces: its [`Status`], routing signals and context
//! updates (execution/outcomes.mdx, execution/failures.mdx).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The four externally visible stage outcomes. Retry intent is internal to
/// the engine and never appears here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Succeeded,
    Failed,
    PartiallySucceeded,
    Skipped,
}

impl Status {
    /// The spelling used in conditions, events and files.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::PartiallySucceeded => "partially_succeeded",
            Status::Skipped => "skipped",
        }
    }

    /// The spelling of StrongDM's Attractor spec (`success`, `fail`,
    /// `partial_success`, `skipped`), which its status files carry as
    /// `outcome`.
    #[must_use]
    pub fn attractor_name(self) -> &'static str {
        match self {
            Status::Succeeded => "success",
            Status::Failed => "fail",
            Status::PartiallySucceeded => "partial_success",
            Status::Skipped => "skipped",
        }
    }

    /// Reads a status, accepting the Attractor spellings (`success`,
    /// `fail`, `partial_success`) as the condition language does.
    #[must_use]
    pub fn parse(text: &str) -> Option<Status> {
        match text.trim().to_ascii_lowercase().as_str() {
            "succeeded" | "success" => Some(Status::Succeeded),
            "failed" | "fail" | "failure" => Some(Status::Failed),
            "partially_succeeded" | "partial_success" => Some(Status::PartiallySucceeded),
            "skipped" | "skip" => Some(Status::Skipped),
            _ => None,
        }
    }

    /// Whether a goal gate that last ended this way is satisfied.
    #[must_use]
    pub(crate) fn satisfies_goal_gate(self) -> bool {
        matches!(self, Status::Succeeded | Status::PartiallySucceeded)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a stage failed, in the six classes of execution/failures.mdx. The
/// class decides retries, the circuit breaker and `loop_restart` crossings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Likely to pass on a retry: timeouts, rate limits, network errors.
    TransientInfra,
    /// Retrying will not help: a failing command, bad configuration.
    Deterministic,
    /// A resource limit was reached.
    BudgetExhausted,
    /// Reserved for loop detection.
    CompilationLoop,
    /// The user or the system cancelled the stage.
    Canceled,
    /// Reserved for scope enforcement.
    Structural,
}

impl FailureClass {
    /// The spelling stored in context as `failure_class`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::TransientInfra => "transient_infra",
            FailureClass::Deterministic => "deterministic",
            FailureClass::BudgetExhausted => "budget_exhausted",
            FailureClass::CompilationLoop => "compilation_loop",
            FailureClass::Canceled => "canceled",
            FailureClass::Structural => "structural",
        }
    }

    /// Whether repeats of this failure count towards the circuit breaker
    /// (only deterministic and structural failures do).
    #[must_use]
    pub(crate) fn counts_for_circuit_breaker(self) -> bool {
        matches!(self, FailureClass::Deterministic | FailureClass::Structural)
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure's details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Failure {
    pub class: FailureClass,
    /// What went wrong, in plain words ("command exited with status 1").
    pub message: String,
    /// Whether another attempt might succeed. Transient failures always may;
    /// handlers mark other failures retryable when the node asks for it.
    #[serde(default)]
    pub retryable: bool,
}

/// The result of one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct Outcome {
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// A label to prefer among the outgoing edges (human gate selections,
    /// routing directives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_label: Option<String>,
    /// Target node ids to prefer, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggested_next_ids: Vec<String>,
    /// A node to go to next, bypassing edge selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jump_to_node: Option<String>,
    /// Keys merged into the run context after the stage.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub context_updates: Map<String, Value>,
    /// Free-form remarks recorded with the stage (which policy promoted it, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the stage spent on language models, over all its attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmUsage>,
    /// Files the stage wrote, relative to the work dir, sorted and without
    /// duplicates (agents/outputs.mdx): an agent's successful
    /// `write_file`, `edit_file` and `apply_patch` calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_touched: Vec<String>,
}

/// A stage's language-model spend: the model that answered last and the
/// tokens and dollars of every call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct LlmUsage {
    pub provider: String,
    pub model: String,
    #[serde(flatten)]
    pub spend: super::Spend,
}

impl LlmUsage {
    /// `claude-sonnet-4-5, 12.4k in / 3.2k out, $0.05`.
    #[must_use]
    pub fn describe(&self) -> String {
        let cost = (self.spend.unpriced_calls == 0).then_some(self.spend.cost);
        format!(
            "{}, {}",
            self.model,
            crate::model::spend::describe(&self.spend.usage, cost)
        )
    }
}

impl Outcome {
    /// Replaces secrets ([`crate::secrets::Redactor`]) in everything the
    /// outcome says in words: the failure message, notes and context
    /// updates. Labels and node ids come from the workflow and are kept.
    pub fn redact(&mut self, redactor: &crate::secrets::Redactor) {
        if let Some(failure) = &mut self.failure {
            redactor.string(&mut failure.message);
        }
        for note in &mut self.notes {
            redactor.string(note);
        }
        for value in self.context_updates.values_mut() {
            redactor.json(value);
        }
    }

    /// A plain success.
    #[must_use]
    pub fn succeeded() -> Outcome {
        Outcome::with_status(Status::Succeeded)
    }

    /// An outcome with `status` and nothing else.
    #[must_use]
    pub(crate) fn with_status(status: Status) -> Outcome {
        Outcome {
            status,
            failure: None,
            preferred_label: None,
            suggested_next_ids: Vec::new(),
            jump_to_node: None,
            context_updates: Map::new(),
            notes: Vec::new(),
            llm: None,
            files_touched: Vec::new(),
        }
    }

    /// A failure of `class` saying `message`; not retryable.
    #[must_use]
    pub fn failed(class: FailureClass, message: impl Into<String>) -> Outcome {
        Outcome {
            failure: Some(Failure {
                class,
                message: message.into(),
                retryable: false,
            }),
            ..Outcome::with_status(Status::Failed)
        }
    }

    /// Marks the failure retryable (no effect on a success).
    #[must_use]
    pub(crate) fn retryable(mut self) -> Outcome {
        if let Some(failure) = &mut self.failure {
            failure.retryable = true;
        }
        self
    }

    /// Sets a context update.
    #[must_use]
    pub fn update(mut self, key: impl Into<String>, value: impl Into<Value>) -> Outcome {
        self.context_updates.insert(key.into(), value.into());
        self
    }

    /// The failure message, if the stage failed.
    #[must_use]
    pub fn failure_reason(&self) -> Option<&str> {
        self.failure.as_ref().map(|f| f.message.as_str())
    }

    /// Whether the engine may run the stage again.
    #[must_use]
    pub(crate) fn wants_retry(&self) -> bool {
        self.status == Status::Failed
            && self
                .failure
                .as_ref()
                .is_some_and(|f| f.retryable || f.class == FailureClass::TransientInfra)
    }
}

/// A failure's fingerprint for the circuit breaker:
/// `node|class|message`, the message lowercased, hex runs replaced by
/// `<hex>`, digit runs by `<n>`, cut to 240 characters
/// (execution/failures.mdx, "How signatures work").
#[must_use]
pub(crate) fn failure_signature(node_id: &str, failure: &Failure) -> String {
    format!(
        "{node_id}|{}|{}",
        failure.class,
        normalise_message(&failure.message)
    )
}

fn normalise_message(message: &str) -> String {
    let lower = message.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let chars: Vec<char> = lower.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_hexdigit() {
            // A run of hex digits: `<hex>` when it is long enough to be an id
            // or hash (and has a letter), `<n>` when it is all digits.
            let start = i;
            while i < chars.len() && chars[i].is_ascii_hexdigit() {
                i += 1;
            }
            let run = &chars[start..i];
            let all_digits = run.iter().all(char::is_ascii_digit);
            let bounded = (start == 0 || !chars[start - 1].is_alphanumeric())
                && (i == chars.len() || !chars[i].is_alphanumeric());
            if all_digits {
                out.push_str("<n>");
            } else if run.len() >= 6 && bounded {
                out.push_str("<hex>");
            } else {
                // An ordinary word such as "dead" or "face": keep its
                // letters, still folding any digits inside it.
                let mut in_digits = false;
                for &ch in run {
                    if ch.is_ascii_digit() {
                        if !in_digits {
                            out.push_str("<n>");
                        }
                        in_digits = true;
                    } else {
                        out.push(ch);
                        in_digits = false;
                    }
                }
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out.chars().take(240).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attractor_spellings_read_as_statuses() {
        assert_eq!(Status::parse("success"), Some(Status::Succeeded));
        assert_eq!(Status::parse("fail"), Some(Status::Failed));
        assert_eq!(
            Status::parse("partial_success"),
            Some(Status::PartiallySucceeded)
        );
        assert_eq!(Status::parse("nope"), None);
        for status in [
            Status::Succeeded,
            Status::Failed,
            Status::PartiallySucceeded,
            Status::Skipped,
        ] {
            assert_eq!(Status::parse(status.attractor_name()), Some(status));
        }
    }

    #[test]
    fn signatures_fold_numbers_and_hashes_so_repeats_match() {
        let f = |m: &str| Failure {
            class: FailureClass::Deterministic,
            message: m.into(),
            retryable: false,
        };
        let a = failure_signature("verify", &f("Test failed at line 42 (commit 9f8e7d6c5b)"));
        let b = failure_signature("verify", &f("test failed at line 7 (commit 0a1b2c3d4e)"));
        assert_eq!(a, b);
        assert_eq!(
            a,
            "verify|deterministic|test failed at line <n> (commit <hex>)"
        );
    }

    #[test]
    fn signatures_are_cut_to_240_characters_of_message() {
        let f = Failure {
            class: FailureClass::Structural,
            message: "x".repeat(1000),
            retryable: false,
        };
        let sig = failure_signature("n", &f);
        assert_eq!(sig.len(), "n|structural|".len() + 240);
    }

    #[test]
    fn only_retryable_or_transient_failures_want_a_retry() {
        assert!(!Outcome::failed(FailureClass::Deterministic, "x").wants_retry());
        assert!(
            Outcome::failed(FailureClass::Deterministic, "x")
                .retryable()
                .wants_retry()
        );
        assert!(Outcome::failed(FailureClass::TransientInfra, "x").wants_retry());
        assert!(!Outcome::succeeded().wants_retry());
    }
}
