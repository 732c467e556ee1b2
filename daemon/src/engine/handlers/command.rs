//! Command (`parallelogram`): runs `script` with `bash -c` (or `python3 -c`
//! for `language="python"`) in the run's working directory. Output streams
//! to `stdout.log`/`stderr.log` and to `command.output` events as it
//! arrives; exit status 0 means succeeded. A timeout (`timeout`, default
//! 600 s) or a cancel kills the whole process group.

use std::time::Duration;

use serde_json::{Value, json};

use super::StageCx;
use crate::engine::event::EventKind;
use crate::engine::outcome::{FailureClass, Outcome};
use crate::engine::output;
use crate::engine::process::{self, Language, Script};
use crate::engine::retry::RetryPolicy;

/// How long a command may run when the node sets no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

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
    let invocation = json!({
        "command": source,
        "language": language.as_str(),
        "timeout_ms": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        "work_dir": cx.run.work_dir,
        "attempt": cx.attempt,
    });
    cx.write_file("script_invocation.json", pretty(&invocation).as_bytes());

    let mut env = vec![
        ("WEFT_RUN_ID".into(), cx.run.run_id.clone()),
        ("WEFT_NODE_ID".into(), node.id.to_string()),
        ("WEFT_VISIT".into(), cx.visit.to_string()),
    ];
    // A script that reads $WEFT_CONTEXT gets the run context as a JSON file
    // (blob refs read back). Only then: writing it for every command would
    // cost a file per stage for nothing.
    if source.contains("WEFT_CONTEXT") {
        let path = cx.dir.join("context.json");
        let resolved = resolved_context(cx);
        match serde_json::to_vec_pretty(&resolved) {
            Ok(bytes) => match crate::store::write_atomic(&path, &bytes) {
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
    };
    let at = cx.at();
    let result = process::run(
        &script,
        &cx.run.cancel,
        &cx.dir.join("stdout.log"),
        &cx.dir.join("stderr.log"),
        |stream, text| {
            let _ = cx.recorder.emit(
                EventKind::CommandOutput {
                    stream,
                    text: text.to_string(),
                },
                at,
            );
        },
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
    });
    cx.write_file("script_timing.json", pretty(&timing).as_bytes());

    // Command output always goes to the blob store (without secrets: see
    // docs/engine.md); the context holds refs.
    let mut outcome = Outcome::succeeded();
    for (key, text) in [
        ("command.output", &result.stdout),
        ("command.stderr", &result.stderr),
    ] {
        let text = cx.run.redactor.text(text);
        match cx
            .run
            .blobs
            .put_json(&Value::String(text.clone().into_owned()))
        {
            Ok((blob, new)) => {
                if new {
                    let size = u64::try_from(text.len()).unwrap_or(u64::MAX);
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
            format!("command timed out after {}", human_duration(timeout)),
        );
    }
    if result.exit_code != Some(0) {
        let status = match (result.exit_code, result.signal) {
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
        return if RetryPolicy::explicit(node) {
            o.retryable()
        } else {
            o
        };
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

/// `1.5s`, `600s`, `250ms`.
pub fn human_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}
