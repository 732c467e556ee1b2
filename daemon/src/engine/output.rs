//! Structured output in a stage's text: routing directives and JSON checked
//! against a schema (agents/outputs.mdx, "Routing directives" and "Custom
//! structured outputs").

use serde_json::{Map, Value};

use crate::model::{FailureClass, Outcome, Status};

/// The fields that make a JSON object a routing directive.
pub(crate) const ROUTING_FIELDS: [&str; 5] = [
    "outcome",
    "failure_reason",
    "preferred_next_label",
    "suggested_next_ids",
    "context_updates",
];

/// Every balanced `{...}` in `text` that parses as a JSON object, in order.
/// Braces inside JSON strings do not count; nested objects are returned as
/// part of their outermost object only.
#[must_use]
pub(crate) fn json_objects(text: &str) -> Vec<Map<String, Value>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        match balanced_end(bytes, i) {
            Some(end) => {
                if let Some(Ok(Value::Object(map))) =
                    text.get(i..=end).map(serde_json::from_str::<Value>)
                {
                    found.push(map);
                    i = end + 1;
                    continue;
                }
                // Not JSON (prose in braces, say): look inside it instead.
                i += 1;
            }
            None => i += 1,
        }
    }
    found
}

/// The index of the `}` closing the `{` at `start`, skipping strings.
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, &b) in bytes.get(start..)?.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(start + offset);
                }
            }
            _ => {}
        }
    }
    None
}

/// The last JSON object in `text`.
#[must_use]
pub(crate) fn last_object(text: &str) -> Option<Map<String, Value>> {
    json_objects(text).pop()
}

/// The last JSON object with at least one routing field.
#[must_use]
pub(crate) fn last_routing_object(text: &str) -> Option<Map<String, Value>> {
    json_objects(text)
        .into_iter()
        .rev()
        .find(|o| ROUTING_FIELDS.iter().any(|f| o.contains_key(*f)))
}

/// How a retry request's failure message starts (see [`apply_routing`]):
/// the engine recognises it when the attempts run out.
pub(crate) const RETRY_REQUESTED: &str = "the stage asked to be retried (outcome \"retry\")";

/// Whether `outcome` is a stage's request to be run again (`"outcome":
/// "retry"`), not a failure of its own.
#[must_use]
pub(crate) fn is_retry_request(outcome: &Outcome) -> bool {
    outcome.status == Status::Failed
        && outcome.failure.as_ref().is_some_and(|f| {
            f.class == FailureClass::TransientInfra
                && f.retryable
                && f.message.starts_with(RETRY_REQUESTED)
        })
}

/// Applies a routing directive to `outcome`, checking field types.
/// Fails (with a message naming the field) on a malformed directive.
///
/// An `outcome` replaces the status and whatever failure `outcome` had (a
/// command's exit status, when its status file reports otherwise).
/// `"retry"` (Attractor's RETRY: run me again) is never a final status: it
/// becomes a retryable `transient_infra` failure, so the node's retry
/// budget (`max_retries`, the graph's `default_max_retries`) runs the stage
/// again, and when the budget is spent the stage fails, or partially
/// succeeds under `allow_partial=true`. Transient, because the stage itself
/// says another attempt may pass, which is what that class means; and so
/// a graph default retries it for every kind of stage.
pub(crate) fn apply_routing(
    directive: &Map<String, Value>,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let mut retry = false;
    if let Some(v) = directive.get("outcome") {
        retry = v
            .as_str()
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("retry"));
        let status = if retry {
            Status::Failed
        } else {
            v.as_str().and_then(Status::parse).ok_or_else(|| {
                format!(
                    "`outcome` must be one of succeeded, failed, partially_succeeded, skipped, retry; got {v}"
                )
            })?
        };
        outcome.status = status;
        outcome.failure = None;
    }
    if let Some(v) = directive.get("failure_reason") {
        let reason = v
            .as_str()
            .ok_or_else(|| format!("`failure_reason` must be a string; got {v}"))?;
        if retry {
            outcome.failure = Some(crate::model::Failure {
                class: FailureClass::TransientInfra,
                message: format!("{RETRY_REQUESTED}: {reason}"),
                retryable: true,
            });
        } else if outcome.status == Status::Failed {
            outcome.failure = Some(crate::model::Failure {
                class: FailureClass::Deterministic,
                message: reason.to_string(),
                retryable: false,
            });
        }
    }
    if retry && outcome.failure.is_none() {
        outcome.failure = Some(crate::model::Failure {
            class: FailureClass::TransientInfra,
            message: RETRY_REQUESTED.to_string(),
            retryable: true,
        });
    }
    if outcome.status == Status::Failed && outcome.failure.is_none() {
        outcome.failure = Some(crate::model::Failure {
            class: FailureClass::Deterministic,
            message: "the stage reported outcome=failed".into(),
            retryable: false,
        });
    }
    if let Some(v) = directive.get("preferred_next_label") {
        let label = v
            .as_str()
            .ok_or_else(|| format!("`preferred_next_label` must be a string; got {v}"))?;
        outcome.preferred_label = Some(label.to_string());
    }
    if let Some(v) = directive.get("suggested_next_ids") {
        let ids = v
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|x| x.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| format!("`suggested_next_ids` must be an array of strings; got {v}"))?;
        outcome.suggested_next_ids = ids;
    }
    if let Some(v) = directive.get("context_updates") {
        let updates = v
            .as_object()
            .ok_or_else(|| format!("`context_updates` must be an object; got {v}"))?;
        for (k, v) in updates {
            outcome.context_updates.insert(k.clone(), v.clone());
        }
    }
    Ok(())
}

/// Adds a status file's `notes` to `outcome`: Attractor writes one string,
/// and a list of strings reads as well. Routing directives in a stage's
/// output leave `notes` alone (their notes were always ignored, so a
/// directive that carries anything there stays valid).
pub(crate) fn apply_notes(
    report: &Map<String, Value>,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let Some(v) = report.get("notes") else {
        return Ok(());
    };
    let invalid = || format!("`notes` must be a string or an array of strings; got {v}");
    match v {
        Value::String(s) => outcome.notes.push(s.clone()),
        Value::Array(items) => {
            let notes = items
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(invalid)?;
            outcome.notes.extend(notes);
        }
        _ => return Err(invalid()),
    }
    Ok(())
}

/// Why output failed a custom `output_schema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaProblem {
    /// The schema itself cannot be used (missing, not JSON, not a schema):
    /// asking the model again cannot help.
    Schema(String),
    /// The output does not match: a repair turn may fix it.
    Invalid(String),
}

impl SchemaProblem {
    /// The message, whichever kind.
    #[must_use]
    pub(crate) fn into_message(self) -> String {
        match self {
            SchemaProblem::Schema(m) | SchemaProblem::Invalid(m) => m,
        }
    }
}

/// Checks the last JSON object of `text` against the schema file `schema`
/// (`@path`, relative to `base_dir`) and returns it. `source` says where
/// the text came from ("the command printed", "the response has").
pub(crate) fn check_schema(
    base_dir: &std::path::Path,
    schema: &str,
    text: &str,
    source: &str,
) -> Result<Value, SchemaProblem> {
    let written = schema.trim();
    let path = crate::lang::workflow::resolve_path(base_dir, written.trim_start_matches('@'));
    // As the loader read it: inside the workflow's tree, a regular file,
    // capped.
    let schema_text = crate::lang::files::Tree::of(base_dir)
        .read_text(&path, crate::limits::MAX_REFERENCED_BYTES)
        .map_err(|e| {
            SchemaProblem::Schema(format!("cannot read output schema {}: {e}", path.display()))
        })?;
    let schema_json: Value = serde_json::from_str(&schema_text).map_err(|e| {
        SchemaProblem::Schema(format!("output schema {} is not JSON: {e}", path.display()))
    })?;
    check_against(&schema_json, written, text, source)
}

/// Checks the last JSON object of `text` against `schema` (named `written`
/// in messages) and returns it: the check behind [`check_schema`], for
/// schemas Weft holds itself (the retro's).
pub(crate) fn check_against(
    schema: &Value,
    written: &str,
    text: &str,
    source: &str,
) -> Result<Value, SchemaProblem> {
    let validator = jsonschema::validator_for(schema).map_err(|e| {
        SchemaProblem::Schema(format!(
            "output schema {written} is not a valid JSON Schema: {e}"
        ))
    })?;
    let Some(found) = last_object(text) else {
        return Err(SchemaProblem::Invalid(format!(
            "output schema validation failed: {source} no JSON object to check against {written}"
        )));
    };
    let value = Value::Object(found);
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(SchemaProblem::Invalid(format!(
            "output schema validation failed against {written}: {}",
            problems.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_object_with_a_routing_field_wins() {
        let text = r#"Plan {"a": 1} then {"preferred_next_label": "fix"} and {"note": "x"} done"#;
        let found = last_routing_object(text).expect("directive");
        assert_eq!(found["preferred_next_label"], "fix");
        assert_eq!(
            last_object(text).map(|o| o["note"].clone()),
            Some("x".into())
        );
    }

    #[test]
    fn braces_in_strings_and_prose_do_not_confuse_the_scan() {
        let text = r#"use {braces} freely {"outcome": "failed", "failure_reason": "a } in text"}"#;
        let found = last_routing_object(text).expect("directive");
        assert_eq!(found["failure_reason"], "a } in text");
        let mut outcome = Outcome::succeeded();
        apply_routing(&found, &mut outcome).expect("valid");
        assert_eq!(outcome.status, Status::Failed);
        assert_eq!(outcome.failure_reason(), Some("a } in text"));
    }

    #[test]
    fn a_retry_directive_is_a_retryable_transient_failure_that_keeps_its_reason() {
        let retry: Map<String, Value> =
            serde_json::from_str(r#"{"outcome": "retry", "failure_reason": "flaky network"}"#)
                .expect("json");
        let mut outcome = Outcome::succeeded();
        apply_routing(&retry, &mut outcome).expect("valid");
        assert!(outcome.wants_retry());
        assert!(is_retry_request(&outcome));
        let failure = outcome.failure.as_ref().expect("failure");
        assert_eq!(failure.class, FailureClass::TransientInfra);
        assert!(failure.message.ends_with(": flaky network"), "{failure:?}");
        // A plain failure is not a retry request.
        let fail: Map<String, Value> =
            serde_json::from_str(r#"{"outcome": "fail"}"#).expect("json");
        let mut outcome = Outcome::succeeded();
        apply_routing(&fail, &mut outcome).expect("valid");
        assert!(!outcome.wants_retry() && !is_retry_request(&outcome));
    }

    #[test]
    fn malformed_directives_name_the_field() {
        let bad: Map<String, Value> =
            serde_json::from_str(r#"{"suggested_next_ids": "fix"}"#).expect("json");
        let err = apply_routing(&bad, &mut Outcome::succeeded()).expect_err("invalid");
        assert!(err.contains("suggested_next_ids"), "{err}");
    }
}
