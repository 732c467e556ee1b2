//! `weft events RUN`: a run's events in sequence order, as one readable line
//! each or as JSON envelopes, optionally following a live run.

use std::io::Write;
use std::time::Duration;

use super::EventsArgs;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use super::reader::Reader;
use crate::model::RunStatus;
use crate::model::{Event, EventKind};

use crate::util::duration::elapsed;
use crate::util::text::one_line;

/// How often `--follow --no-daemon` looks for new events. Each look is one
/// indexed query on a read-only connection, cheap enough to do five times a
/// second.
const POLL: Duration = Duration::from_millis(200);

/// At most this many events are held in memory at a time.
const PAGE: u32 = 1000;

/// How many characters of command output a line shows.
const OUTPUT_WIDTH: usize = 100;

/// `weft events`.
pub fn run(args: &EventsArgs) -> CliResult {
    let home = super::home()?;
    super::block_on(async {
        let reader = Reader::open(&home, args.no_daemon)
            .await
            .map_err(CliError::Usage)?;
        let run_id = reader.get(&args.run).await.map_err(CliError::Usage)?.run.id;
        let mut out = std::io::stdout().lock();
        match print(&reader, &run_id, args, &mut out).await {
            Ok(()) => exit::code(EXIT_OK),
            Err(Failure::Read(e)) => Err(CliError::Usage(e)),
            Err(Failure::Write(e)) => super::output_done(Err(e)),
        }
    })
}

enum Failure {
    Read(String),
    Write(std::io::Error),
}

/// Prints the recorded events after `--after`, then with `--follow` the
/// live ones until the run ends: from the daemon's subscription (which
/// sends each event once, in order, with no gap), or by polling the
/// database.
async fn print(
    reader: &Reader,
    run_id: &str,
    args: &EventsArgs,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let mut after = args.after;
    // A run that has ended (or was interrupted) has nothing live to follow:
    // print what was recorded. One that ends from here on records its last
    // event before its status changes, so the subscription sees that event.
    let live = args.follow && active(reader.status(run_id).await.map_err(Failure::Read)?);
    if live
        && let Some(mut live) = reader
            .subscribe(run_id, after)
            .await
            .map_err(Failure::Read)?
    {
        let mut next = live.next().await;
        while let Some(event) = next.take() {
            after = event.seq;
            write_event(out, &event, args.json)
                .and_then(|()| out.flush())
                .map_err(Failure::Write)?;
            if !ends_run(&event.kind) {
                next = live.next().await;
                continue;
            }
            // The end of an earlier life of a resumed run is history: the
            // follow ends only at an end that is the run's last event and
            // is followed by an ended status (recorded just after it).
            loop {
                let detail = reader.get(run_id).await.map_err(Failure::Read)?;
                if detail.run.last_seq <= event.seq && !active(detail.run.status) {
                    return Ok(());
                }
                if let Ok(event) = tokio::time::timeout(POLL, live.next()).await {
                    next = event;
                    break;
                }
            }
        }
        return Err(Failure::Read(format!(
            "lost the connection to weftd; `weft events {run_id} --follow --after {after}` \
                 continues"
        )));
    }
    loop {
        // Status before events: the engine records the run's last event
        // before marking it ended, so once an ended status has been read the
        // events query that follows sees every event there will be.
        let ended = !live || !active(reader.status(run_id).await.map_err(Failure::Read)?);
        let mut printed = false;
        loop {
            let page = reader
                .events(run_id, after, PAGE)
                .await
                .map_err(Failure::Read)?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            printed = true;
            page.iter()
                .try_for_each(|event| write_event(out, event, args.json))
                .and_then(|()| out.flush())
                .map_err(Failure::Write)?;
        }
        if !live || (ended && !printed) {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether a run with `status` may still record events (without being
/// resumed first).
fn active(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Queued | RunStatus::Running | RunStatus::Blocked
    )
}

/// Whether `kind` is the last event of a run (until it is resumed).
fn ends_run(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::RunCompleted { .. }
            | EventKind::RunFailed { .. }
            | EventKind::RunCancelled { .. }
            | EventKind::RunInterrupted { .. }
    )
}

fn write_event(out: &mut impl Write, event: &Event, json: bool) -> std::io::Result<()> {
    if json {
        let line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        writeln!(out, "{line}")
    } else {
        writeln!(out, "{}", human(event))
    }
}

/// `#seq  HH:MM:SS.mmm  event  node@visit  summary`, with the time of day
/// in UTC as recorded.
fn human(event: &Event) -> String {
    let time = event.ts.get(11..23).unwrap_or(&event.ts);
    let stage = match (&event.node_id, event.visit) {
        (Some(node), Some(visit)) => format!("{node}@{visit}"),
        (Some(node), None) => node.clone(),
        (None, _) => String::new(),
    };
    let line = format!(
        "#{:<4}  {time}  {:<25}  {stage:<16}  {}",
        event.seq,
        event.kind.name(),
        summary(&event.kind)
    );
    line.trim_end().to_string()
}

/// A short description of what the event says.
fn summary(kind: &EventKind) -> String {
    let secs = |ms: &u64| elapsed(Duration::from_millis(*ms));
    match kind {
        EventKind::AgentTurnStarted { turn } => format!("turn {turn}"),
        EventKind::AgentText { text, .. } => one_line(text.trim(), OUTPUT_WIDTH),
        EventKind::AgentTurnCompleted {
            turn,
            tool_calls,
            input_tokens,
            output_tokens,
            duration_ms,
        } => format!(
            "turn {turn}: {tool_calls} tool call(s), {} in / {} out, {}",
            crate::model::spend::tokens(*input_tokens),
            crate::model::spend::tokens(*output_tokens),
            secs(duration_ms)
        ),
        EventKind::AgentToolStarted { tool, summary, .. } => {
            format!("{tool} {}", one_line(summary, OUTPUT_WIDTH))
        }
        EventKind::AgentToolCompleted {
            tool,
            duration_ms,
            is_error,
            preview,
            ..
        } => {
            if *is_error {
                format!(
                    "{tool} failed in {}: {}",
                    secs(duration_ms),
                    one_line(preview.trim(), OUTPUT_WIDTH)
                )
            } else {
                format!("{tool} done in {}", secs(duration_ms))
            }
        }
        EventKind::AgentCompaction {
            original_turns,
            preserved_turns,
            estimated_tokens,
            context_window,
        } => format!(
            "compacted {original_turns} turns (kept the last {preserved_turns}): ~{} of a {}-token window",
            crate::model::spend::tokens(*estimated_tokens),
            crate::model::spend::tokens(*context_window)
        ),
        EventKind::AgentLoopDetected { tools, .. } => {
            format!("loop detected: {}; the model was warned", tools.join(", "))
        }
        EventKind::AgentSteered { text } => format!("steered: {}", one_line(text, OUTPUT_WIDTH)),
        EventKind::RunStarted {
            workflow,
            goal,
            resumed,
            ..
        } => {
            let mut text = format!("workflow {workflow}");
            if *resumed {
                text.push_str(", resumed");
            }
            if let Some(goal) = goal {
                text.push_str(&format!(": {}", one_line(goal, OUTPUT_WIDTH)));
            }
            text
        }
        EventKind::RunCompleted {
            duration_ms,
            failed_stages,
            ..
        } => match super::progress::failed_note(failed_stages) {
            Some(note) => format!("succeeded, {note}, in {}", secs(duration_ms)),
            None => format!("succeeded in {}", secs(duration_ms)),
        },
        EventKind::RunFailed {
            reason,
            duration_ms,
        } => format!("failed after {}: {reason}", secs(duration_ms)),
        EventKind::RunCancelled {
            reason,
            duration_ms,
        } => format!("cancelled after {}: {reason}", secs(duration_ms)),
        EventKind::RunInterrupted {
            reason,
            duration_ms,
        } => format!("interrupted after {}: {reason}", secs(duration_ms)),
        EventKind::RunNotice { message } | EventKind::BudgetWarning { message, .. } => {
            message.clone()
        }
        EventKind::EnvWithheld { names } => format!("withheld from commands: {}", names.join(", ")),
        EventKind::SandboxReady {
            container,
            image,
            attach,
            ..
        } => format!("in container {container} ({image}, {attach})"),
        EventKind::SandboxRemoved { container } => format!("container {container} removed"),
        EventKind::SandboxKept { container, .. } => format!("container {container} kept"),
        EventKind::StageStarted {
            handler, attempt, ..
        } => {
            if *attempt > 1 {
                format!("{handler}, attempt {attempt}")
            } else {
                handler.clone()
            }
        }
        EventKind::StageRetrying {
            attempt,
            delay_ms,
            reason,
        } => format!(
            "attempt {attempt} failed ({reason}); retrying in {}",
            secs(delay_ms)
        ),
        EventKind::StageCompleted {
            status,
            duration_ms,
            attempts,
            outcome,
        }
        | EventKind::StageFailed {
            status,
            duration_ms,
            attempts,
            outcome,
        } => {
            let mut text = format!("{status} in {}", secs(duration_ms));
            if *attempts > 1 {
                text.push_str(&format!(" after {attempts} attempts"));
            }
            if let Some(reason) = outcome.failure_reason() {
                text.push_str(&format!(": {reason}"));
            }
            if !outcome.files_touched.is_empty() {
                text.push_str(&format!("; wrote {}", files(&outcome.files_touched)));
            }
            text
        }
        EventKind::EdgeSelected {
            from_node,
            to_node,
            label,
            condition,
            reason,
        } => {
            // The serde name (`preferred_label`, ...) is the documented one.
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let mut text = format!("{from_node} → {to_node} ({reason}");
            if let Some(label) = label {
                text.push_str(&format!(", label \"{label}\""));
            }
            if let Some(condition) = condition {
                text.push_str(&format!(", condition \"{condition}\""));
            }
            text.push(')');
            text
        }
        EventKind::CheckpointSaved {
            next_node,
            completed,
            ..
        } => match next_node {
            Some(next) => format!("next {next} ({completed} completed)"),
            None => format!("no next node ({completed} completed)"),
        },
        EventKind::CommandOutput { stream, text } => {
            let name = match stream {
                crate::model::Stream::Stdout => "stdout",
                crate::model::Stream::Stderr => "stderr",
            };
            let first = text
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or("");
            format!("{name}: {}", one_line(first, OUTPUT_WIDTH))
        }
        EventKind::LlmCompleted {
            provider,
            model,
            input_tokens,
            output_tokens,
            cost,
            duration_ms,
            ..
        } => format!(
            "{provider}/{model}: {} in {}",
            crate::model::spend::describe(
                &crate::llm::Usage {
                    input: *input_tokens,
                    output: *output_tokens,
                    ..crate::llm::Usage::default()
                },
                *cost
            ),
            elapsed(Duration::from_millis(*duration_ms))
        ),
        EventKind::LlmRetry {
            provider,
            model,
            retry,
            wait_ms,
            error,
            ..
        } => format!(
            "{provider}/{model}: retry {retry} in {}: {}",
            elapsed(Duration::from_millis(*wait_ms)),
            one_line(error, OUTPUT_WIDTH)
        ),
        EventKind::LlmFailover {
            from, to, error, ..
        } => {
            format!("{from} → {to}: {}", one_line(error, OUTPUT_WIDTH))
        }
        EventKind::InterviewStarted {
            question_id,
            question,
            options,
            ..
        } => {
            let mut text = format!("{question_id}: {}", one_line(question, OUTPUT_WIDTH));
            if !options.is_empty() {
                text.push_str(&format!(" [{}]", options.join(" | ")));
            }
            text
        }
        EventKind::InterviewCompleted {
            question_id,
            selected,
            text,
        } => match text {
            Some(answer) => format!(
                "{question_id}: {selected}: {}",
                one_line(answer, OUTPUT_WIDTH)
            ),
            None => format!("{question_id}: {selected}"),
        },
        EventKind::InterviewTimeout {
            question_id,
            default_choice,
        } => match default_choice {
            Some(choice) => format!("{question_id}: no answer in time; default {choice}"),
            None => format!("{question_id}: no answer in time"),
        },
        EventKind::InterviewInterrupted {
            question_id,
            reason,
        } => format!("{question_id}: {reason}"),
        EventKind::LoopRestart { from_node, to_node } => {
            format!("{from_node} → {to_node} with a fresh context")
        }
        EventKind::WatchdogTimeout { idle_secs } => format!("no activity for {idle_secs}s"),
        EventKind::ArtifactCaptured { paths, skipped } => {
            if *skipped > 0 {
                format!("{} ({skipped} skipped)", paths.join(", "))
            } else {
                paths.join(", ")
            }
        }
        EventKind::ParallelStarted {
            branches,
            join,
            join_policy,
            max_parallel,
        } => format!(
            "{} ({}), join at {}, {join_policy}, at most {max_parallel} at once",
            super::report::count(branches.len() as u64, "branch", "branches"),
            branches.join(", "),
            join.as_deref().unwrap_or("none")
        ),
        EventKind::ParallelBranchCompleted {
            branch,
            status,
            failure_reason,
        } => match failure_reason {
            Some(reason) => format!("branch {branch} {status}: {reason}"),
            None => format!("branch {branch} {status}"),
        },
        EventKind::ParallelCompleted {
            status,
            succeeded,
            failed,
        } => format!("{status} ({succeeded} succeeded, {failed} failed)"),
    }
}

/// Files an agent stage wrote, the first few by name.
fn files(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EdgeReason;

    fn event(seq: u64, node: Option<(&str, u32)>, kind: EventKind) -> Event {
        Event {
            seq,
            ts: "2026-12-02T12:34:56.789Z".into(),
            run_id: "R".into(),
            node_id: node.map(|(n, _)| n.to_string()),
            visit: node.map(|(_, v)| v),
            kind,
        }
    }

    #[test]
    fn a_line_shows_seq_time_name_stage_and_summary() {
        let line = human(&event(
            7,
            Some(("test", 2)),
            EventKind::EdgeSelected {
                from_node: "test".into(),
                to_node: "exit".into(),
                label: None,
                condition: Some("outcome=succeeded".into()),
                reason: EdgeReason::Condition,
            },
        ));
        assert_eq!(
            line,
            "#7     12:34:56.789  edge.selected              test@2            \
             test → exit (condition, condition \"outcome=succeeded\")"
        );
    }

    #[test]
    fn command_output_shows_its_first_non_empty_line() {
        let line = human(&event(
            3,
            Some(("build", 1)),
            EventKind::CommandOutput {
                stream: crate::model::Stream::Stderr,
                text: "\n   warning: x  \nmore\n".into(),
            },
        ));
        assert!(line.ends_with("stderr: warning: x"), "{line}");
    }

    #[test]
    fn run_level_events_leave_the_stage_blank() {
        let line = human(&event(
            1,
            None,
            EventKind::RunCompleted {
                duration_ms: 1500,
                failed_stages: Vec::new(),
                exit_node: None,
            },
        ));
        assert_eq!(
            line,
            "#1     12:34:56.789  run.completed                                succeeded in 1.5s"
        );
    }
}
