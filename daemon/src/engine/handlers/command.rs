//! Command (`parallelogram`): runs `script` with `bash -c` (or `python3 -c`
//! for `language="python"`) in the run's working directory. Output streams
//! to `stdout.log`/`stderr.log` and to `command.output` events as it
//! arrives; exit status 0 means succeeded. A timeout (`timeout`, default
//! 600 s) or a cancel kills the whole process group.

use std::time::Duration;

use serde_json::{Value, json};

use super::{StageCx, reported_status};
use crate::engine::output;
use crate::engine::retry::RetryPolicy;
use crate::exec::process::{self, Language, Script};
use crate::model::EventKind;
use crate::model::{FailureClass, Outcome};

/// How long a command may run when the node sets no `timeout`.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How much of one attempt's output (both streams) is recorded as
/// `command.output` events — in the database, `progress.jsonl` and every
/// live subscriber. Past it one `run.notice` says so and the output goes
/// on into `stdout.log`/`stderr.log` only, so a command printing gigabytes
/// costs the store a bounded amount.
pub(crate) const OUTPUT_EVENT_BUDGET: usize = 1024 * 1024;

/// What each `command.output` event costs against [`OUTPUT_EVENT_BUDGET`]
/// besides its text: an event row and its envelope. Without it a command
/// writing one byte at a time would record a million events.
const OUTPUT_EVENT_COST: usize = 64;

pub async fn run(cx: &StageCx<'_>) -> Outcome {
    let node = cx.node;
    let Some(source) = node.attrs.non_empty("script") else {
        return Outcome::failed(
            FailureClass::Deterministic,
            "command node has no `script` (write e.g. script=\"cargo test\")",
        );
    };
    let language_name = node
        .attrs
        .text("language")
        .map_or_else(|| "shell".to_string(), |l| l.into_owned());
    let Some(language) = Language::parse(&language_name) else {
        return Outcome::failed(
            FailureClass::Deterministic,
            format!("unknown language `{language_name}`: use \"shell\" or \"python\""),
        );
    };
    let timeout = node
        .attrs
        .value("timeout")
        .and_then(crate::lang::value::Value::as_duration)
        .map_or(DEFAULT_TIMEOUT, crate::lang::value::Duration::to_std);
    let sandbox = match cx.sandbox().await {
        Ok(sandbox) => sandbox,
        Err(outcome) => return outcome,
    };
    let invocation = json!({
        "command": source,
        "language": language.as_str(),
        "timeout_ms": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        "work_dir": cx.run.work_dir,
        "attempt": cx.attempt,
        "sandbox": sandbox.map(|s| json!({
            "provider": "docker",
            "image": s.image(),
            "engine": s.engine(),
        })),
    });
    cx.stage_file("script_invocation.json", Some(pretty(&invocation)));
    // The logs exist when the stage's files are written, empty if nothing
    // was printed (the process creates them at the first output).
    cx.stage_file("stdout.log", None);
    cx.stage_file("stderr.log", None);

    // The command may report its outcome in a file of its own (see
    // reported_status.rs); only this attempt's report counts.
    let status_path = cx.dir.join(reported_status::FILE_NAME);
    if let Err(why) = reported_status::clear(&status_path) {
        return Outcome::failed(FailureClass::Deterministic, why);
    }
    let mut env = vec![
        ("WEFT_RUN_ID".into(), cx.run.run_id.clone()),
        ("WEFT_NODE_ID".into(), node.id.to_string()),
        ("WEFT_VISIT".into(), cx.visit.to_string()),
        ("WEFT_STATUS_FILE".into(), status_path.display().to_string()),
    ];
    // A script that reads $WEFT_CONTEXT gets the run context as a JSON file
    // (blob refs read back). Only then: writing it for every command would
    // cost a file per stage for nothing.
    if source.contains("WEFT_CONTEXT") {
        let path = cx.dir.join("context.json");
        let resolved = resolved_context(cx);
        match serde_json::to_vec_pretty(&resolved) {
            Ok(bytes) => match crate::store::create_private_dir_all(cx.dir)
                .map_err(|e| e.to_string())
                .and_then(|()| crate::store::write_atomic(&path, &bytes).map_err(|e| e.to_string()))
            {
                Ok(()) => env.push(("WEFT_CONTEXT".into(), path.display().to_string())),
                Err(e) => cx.notice(format!("could not write context.json: {e}")),
            },
            Err(e) => cx.notice(format!("could not serialise the context: {e}")),
        }
    }
    let script = Script {
        base_env: cx.run.env.clone(),
        language,
        source: source.into_owned(),
        work_dir: cx.run.work_dir.clone(),
        env,
        timeout,
        group_record: Some(cx.dir.join(process::GROUP_RECORD)),
    };
    let at = cx.at();
    let mut budget = OutputBudget::default();
    let on_output = |stream, text: &str| match budget.take(text) {
        Some(recorded) => {
            if !recorded.is_empty() {
                let _ = cx.recorder.emit(
                    EventKind::CommandOutput {
                        stream,
                        text: recorded.to_string(),
                    },
                    at,
                );
            }
            if budget.exhausted() {
                cx.notice(format!(
                    "{} printed more than {} MiB: the rest of its output is in its \
                         stdout.log/stderr.log only (weft logs {} {})",
                    node.id,
                    OUTPUT_EVENT_BUDGET / (1024 * 1024),
                    cx.run.run_id,
                    node.id
                ));
            }
        }
        // Output is activity even when it is no longer recorded.
        None => cx.recorder.touch(),
    };
    let (stdout_log, stderr_log) = (cx.dir.join("stdout.log"), cx.dir.join("stderr.log"));
    let result = crate::sandbox::run::run_script(
        sandbox.map(std::sync::Arc::as_ref),
        &script,
        &cx.run.cancel,
        &stdout_log,
        &stderr_log,
        on_output,
    )
    .await;
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            return Outcome::failed(
                FailureClass::Deterministic,
                format!("could not start the command: {e}"),
            );
        }
    };
    let timing = json!({
        "duration_ms": u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
        "exit_code": result.exit_code,
        "signal": result.signal,
        "timed_out": result.timed_out,
        "killed_by": result.killed_by,
    });
    cx.stage_file("script_timing.json", Some(pretty(&timing)));

    // Command output always goes to the blob store (without secrets: see
    // docs/engine.md); the context holds refs to the end of each stream (the
    // logs hold all of it).
    let mut outcome = Outcome::succeeded();
    for (key, text, total, log) in [
        (
            "command.output",
            &result.stdout,
            result.stdout_total,
            "stdout.log",
        ),
        (
            "command.stderr",
            &result.stderr,
            result.stderr_total,
            "stderr.log",
        ),
    ] {
        // Cut or not is decided on the text as captured: redaction changes
        // its length.
        let kept = u64::try_from(text.len()).unwrap_or(u64::MAX);
        let text = cx.run.redactor.text(text);
        let value = if total > kept {
            format!(
                "[… {} earlier bytes cut: the whole output is in {}]\n{text}",
                total - kept,
                cx.dir.join(log).display()
            )
        } else {
            text.into_owned()
        };
        let size = u64::try_from(value.len()).unwrap_or(u64::MAX);
        match cx.run.blobs.put_json(&Value::String(value)) {
            Ok((blob, new)) => {
                if new {
                    let _ = cx.recorder.store().record_blob(blob.hex(), size);
                }
                outcome
                    .context_updates
                    .insert(key.into(), blob.uri().into());
            }
            Err(e) => cx.notice(format!("could not store {key} in the blob store: {e}")),
        }
    }

    let output_refs = outcome.context_updates.clone();
    let failed = move |class, message: String| {
        let mut o = Outcome::failed(class, message);
        o.context_updates = output_refs.clone();
        o
    };
    if let Some(reason) = result.cancelled {
        return failed(FailureClass::Canceled, format!("cancelled: {reason}"));
    }
    if result.timed_out {
        return failed(
            FailureClass::TransientInfra,
            format!(
                "command timed out after {}",
                crate::util::duration::setting(timeout)
            ),
        );
    }
    let exit_failure = (result.exit_code != Some(0)).then(|| {
        let status = match (result.exit_code, result.signal) {
            (Some(code), _) if result.killed_by.is_some() => format!(
                "command exited with status {code}: killed by {}",
                result.killed_by.as_deref().unwrap_or_default()
            ),
            (Some(code), _) => format!("command exited with status {code}"),
            (None, Some(sig)) => format!("command was killed by signal {sig}"),
            (None, None) => "command ended abnormally".to_string(),
        };
        let last_line = result.stderr.lines().rev().find(|l| !l.trim().is_empty());
        let message = match last_line {
            Some(line) => format!("{status}: {}", line.trim()),
            None => status,
        };
        let o = failed(FailureClass::Deterministic, message);
        if RetryPolicy::explicit(node) {
            o.retryable()
        } else {
            o
        }
    });
    // A status file, when the command wrote one, decides the outcome in
    // place of its exit status and of any routing in its output.
    match reported_status::read(&status_path) {
        Err(why) => return failed(FailureClass::Deterministic, why),
        Ok(Some(report)) => {
            let mut reported = exit_failure.unwrap_or(outcome);
            let exit_note = reported.failure_reason().map(str::to_string);
            if let Err(why) = reported_status::apply(&report, &mut reported) {
                return failed(
                    FailureClass::Deterministic,
                    format!("invalid status file {}: {why}", status_path.display()),
                );
            }
            if let Some(exit) = exit_note {
                reported
                    .notes
                    .push(format!("{exit}; the status file decided the outcome"));
            }
            if node.attrs.contains("output_schema") {
                reported.notes.push(
                    "output_schema was not checked: the status file reported the outcome".into(),
                );
            }
            return reported;
        }
        Ok(None) => {}
    }
    if let Some(failure) = exit_failure {
        return failure;
    }

    match node.attrs.non_empty("output_schema") {
        None => outcome,
        Some(schema) if schema.trim() == "routing" => {
            match output::last_routing_object(&result.merged) {
                None => failed(
                    FailureClass::Deterministic,
                    "output_schema=\"routing\": the command printed no JSON object with a routing \
                     field (outcome, preferred_next_label, suggested_next_ids, context_updates, \
                     failure_reason)"
                        .into(),
                ),
                Some(directive) => match output::apply_routing(&directive, &mut outcome) {
                    Ok(()) => outcome,
                    Err(why) => failed(
                        FailureClass::Deterministic,
                        format!("output_schema=\"routing\": invalid routing JSON: {why}"),
                    ),
                },
            }
        }
        Some(schema) => match output::check_schema(
            &cx.run.base_dir,
            &schema,
            &result.merged,
            "the command printed",
        )
        .map_err(output::SchemaProblem::into_message)
        {
            Ok(value) => {
                outcome
                    .context_updates
                    .insert(format!("output.{}", node.id), value);
                outcome
            }
            Err(why) => failed(FailureClass::Deterministic, why),
        },
    }
}

/// Counts output against [`OUTPUT_EVENT_BUDGET`].
#[derive(Default)]
struct OutputBudget {
    /// Text bytes recorded plus [`OUTPUT_EVENT_COST`] per event.
    recorded: usize,
    /// Output arrived that did not fit.
    spent: bool,
}

impl OutputBudget {
    /// The part of `text` to record (cut at a character boundary, maybe
    /// empty), counted; `None` on every call after the one that found the
    /// budget spent, so that call alone gives the notice.
    fn take<'t>(&mut self, text: &'t str) -> Option<&'t str> {
        if self.spent {
            return None;
        }
        let room = OUTPUT_EVENT_BUDGET.saturating_sub(self.recorded + OUTPUT_EVENT_COST);
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.recorded += OUTPUT_EVENT_COST + end;
        self.spent = end < text.len();
        Some(&text[..end])
    }

    /// Whether output was cut: the rest goes to the logs only.
    fn exhausted(&self) -> bool {
        self.spent
    }
}

/// The context with every blob ref read back into its value.
fn resolved_context(cx: &StageCx<'_>) -> Value {
    let mut map = cx.context.values().clone();
    for value in map.values_mut() {
        if let Some(blob) = value.as_str().and_then(crate::store::BlobRef::parse)
            && let Ok(read) = cx.run.blobs.get_json(&blob)
        {
            *value = read;
        }
    }
    Value::Object(map)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_budget_cuts_big_chunks_and_counts_each_event() {
        let mut budget = OutputBudget::default();
        let big = "x".repeat(OUTPUT_EVENT_BUDGET * 2);
        let kept = budget.take(&big).map(str::len);
        assert_eq!(kept, Some(OUTPUT_EVENT_BUDGET - OUTPUT_EVENT_COST));
        assert!(budget.exhausted(), "the cut is reported once");
        assert_eq!(budget.take("more"), None, "then nothing is recorded");

        let mut budget = OutputBudget::default();
        let mut events = 0;
        while let Some(part) = budget.take("y") {
            events += usize::from(!part.is_empty());
        }
        assert_eq!(
            events,
            OUTPUT_EVENT_BUDGET / (OUTPUT_EVENT_COST + 1),
            "one-byte writes cannot make a million events"
        );

        let mut budget = OutputBudget {
            recorded: OUTPUT_EVENT_BUDGET - OUTPUT_EVENT_COST - 2,
            spent: false,
        };
        assert_eq!(budget.take("€"), Some(""), "never half a character");
        assert!(budget.exhausted());
    }
}
