//! `weft run` and `weft resume` through the daemon: start (or resume) the
//! run in weftd, then follow its events with the same progress display as
//! an in-process run, answering human gates from this terminal.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};

use super::daemon::{connect, message};
use super::exit::{self, CliError, CliResult, EXIT_CANCELLED, EXIT_OK, run_exit};
use super::progress::{Gates, Progress, question_of};
use crate::engine::interviewer::{Answer, Console, Interviewer, Question};
use crate::engine::{Conclusion, RunRequest, StageSummary};
use crate::ipc::client::{Client, ClientError};
use crate::ipc::protocol::{
    AnswerBy, CallerEnv, QuestionAnswer, RpcError, RunCancel, RunGet, RunResume, RunStart,
    RunStarted, WorkflowSource,
};
use crate::lang::{Diagnostic, Severity, Span};
use crate::model::RunStatus;
use crate::model::{Event, EventKind};

/// SIGTERM, caught from the start so that it cancels the followed run
/// (as with `--no-daemon`) instead of killing this process and leaving the
/// run going. `None` where it cannot be caught.
fn terminate_signal() -> Option<Signal> {
    signal(SignalKind::terminate()).ok()
}

/// `weft run` through the daemon.
pub async fn run(request: RunRequest, json: bool, detach: bool) -> CliResult {
    let term = if detach { None } else { terminate_signal() };
    let Some(path) = request.workflow_path.clone() else {
        return Err(CliError::usage("the workflow has no path"));
    };
    let shown = (path.display().to_string(), request.source.clone());
    let mut params = RunStart::new(WorkflowSource::Path(path), request.work_dir.clone());
    params.goal = request.goal;
    params.inputs = request.inputs;
    params.dry_run = request.dry_run;
    params.auto_approve = request.auto_approve;
    // Gates of a dry run answer themselves too.
    let auto = request.auto_approve || request.dry_run;
    params.seed = request.seed;
    params.labels = request.labels;
    params.artifacts = request.artifacts;
    params.model = request.model;
    params.env_policy = request.env_policy;
    params.budget = request.budget;
    params.agent = request.agent;
    params.no_checkpoint = request.no_checkpoint;
    params.include_dirty = request.include_dirty;
    params.retro = request.retro;
    params.sandbox = request.sandbox;
    params.env = CallerEnv::current();
    let home = super::home()?;
    let client = connect(&home).await.map_err(|e| {
        CliError::Usage(format!(
            "cannot reach weftd: {e}\n  (run without it: weft run --no-daemon ...)"
        ))
    })?;
    let started: RunStarted = match client.call(params).await {
        Ok(s) => s,
        Err(ClientError::Rpc(e)) if e.is(crate::model::Code::WorkflowInvalid) => {
            let (file, text) = shown;
            return Err(CliError::InvalidWorkflow {
                file,
                text,
                diagnostics: diagnostics_of(&e),
            });
        }
        Err(e) => return Err(CliError::Usage(message(&e))),
    };
    if detach {
        if json {
            println!(
                "{}",
                serde_json::json!({ "run_id": started.run_id, "run_dir": started.run_dir })
            );
        } else {
            println!("{}", started.run_id);
            eprintln!(
                "run {} started in weftd; follow it with: weft events {} --follow",
                started.run_id, started.run_id
            );
        }
        return exit::code(EXIT_OK);
    }
    let run = Followed {
        id: started.run_id,
        run_dir: started.run_dir,
    };
    follow(&client, &run, 0, json, auto, term).await
}

/// The diagnostics a `workflow.invalid` error carries (`data.diagnostics`),
/// for printing as `weft validate` does.
fn diagnostics_of(error: &RpcError) -> Vec<Diagnostic> {
    let listed = error
        .data
        .as_ref()
        .and_then(|d| d.details.get("diagnostics"))
        .and_then(serde_json::Value::as_array);
    listed
        .into_iter()
        .flatten()
        .filter_map(|d| serde_json::from_value::<WireDiagnostic>(d.clone()).ok())
        .map(WireDiagnostic::into_diagnostic)
        .collect()
}

/// A diagnostic as the daemon sends it (see [`Diagnostic`]).
#[derive(Debug, serde::Deserialize)]
struct WireDiagnostic {
    rule: String,
    severity: String,
    message: String,
    #[serde(default)]
    span: Option<WireSpan>,
    #[serde(default)]
    node_id: Option<String>,
    #[serde(default)]
    edge: Option<(String, String)>,
    #[serde(default)]
    hint: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct WireSpan {
    start: u32,
    end: u32,
    line: u32,
    column: u32,
}

impl WireDiagnostic {
    fn into_diagnostic(self) -> Diagnostic {
        let severity = match self.severity.as_str() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            _ => Severity::Info,
        };
        Diagnostic {
            // Rule ids are `&'static str` in the library; this process
            // prints a handful of them and exits, so keeping their text for
            // its lifetime costs nothing.
            rule: Box::leak(self.rule.into_boxed_str()),
            severity,
            message: self.message,
            span: self.span.map(|s| Span {
                start: s.start,
                end: s.end,
                line: s.line,
                column: s.column,
            }),
            node_id: self.node_id,
            edge: self.edge,
            hint: self.hint,
        }
    }
}

/// `weft resume` through the daemon.
pub async fn resume(run: &str, auto_approve: bool, json: bool) -> CliResult {
    let term = terminate_signal();
    let home = super::home()?;
    // How far the run had got before this command: a weftd it starts
    // resumes interrupted runs at once, possibly before asked to (below).
    let seen = crate::store::Store::open_read_only(&home)
        .and_then(|store| store.find_run(run))
        .ok()
        .map(|record| record.last_seq);
    let client = connect(&home)
        .await
        .map_err(|e| CliError::Usage(format!("cannot reach weftd: {e}")))?;
    let (before, stored_auto) = match client
        .call(RunGet {
            run: run.to_string(),
        })
        .await
    {
        Ok(detail) => (
            detail.run.last_seq,
            detail
                .run
                .options
                .get("auto_approve")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
        ),
        Err(e) => return Err(CliError::Usage(message(&e))),
    };
    let params = RunResume {
        run: run.to_string(),
        auto_approve,
        env: CallerEnv::current(),
    };
    match client.call(params).await {
        Ok(started) => {
            let run = Followed {
                id: started.run_id,
                run_dir: started.run_dir,
            };
            follow(
                &client,
                &run,
                before,
                json,
                auto_approve || stored_auto,
                term,
            )
            .await
        }
        // weftd resumes interrupted runs when it starts. When this command
        // started it, that resume may have gone on, or ended, before this
        // request arrived: the run moved since this command first read it.
        // Show what that resume did, as if this one had done it.
        Err(e) if e.is(crate::model::Code::RunNotResumable) => {
            let first = seen.unwrap_or(before);
            let moved = client
                .call(RunGet {
                    run: run.to_string(),
                })
                .await
                .ok()
                .filter(|now| now.run.last_seq > first);
            let Some(now) = moved else {
                return Err(CliError::Usage(message(&e)));
            };
            eprintln!("weftd resumed run {} as it started", now.run.id);
            let run = Followed {
                id: now.run.id.clone(),
                run_dir: now.run.run_dir.clone(),
            };
            follow(
                &client,
                &run,
                first,
                json,
                auto_approve || stored_auto,
                term,
            )
            .await
        }
        Err(e) => Err(CliError::Usage(message(&e))),
    }
}

/// A question being asked on this terminal.
type Asking<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + 'a>>;

/// The run being followed.
struct Followed {
    id: String,
    run_dir: PathBuf,
}

/// Follows a run's events until it ends, showing progress and asking its
/// questions here. Ctrl-C or SIGTERM cancels the run (and this exits 130
/// once it has stopped); a second one detaches.
async fn follow(
    client: &Client,
    run: &Followed,
    after_seq: u64,
    json: bool,
    auto: bool,
    mut term: Option<Signal>,
) -> CliResult {
    let run_id = run.id.as_str();
    // Gates are asked here only on a terminal; otherwise they wait for
    // another client (`weft answer`, the app), and the progress says how.
    let on_terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let progress = Progress::stderr(match (auto, on_terminal) {
        (true, _) => Gates::Auto,
        (false, true) => Gates::Here,
        (false, false) => Gates::Elsewhere,
    });
    let observe = progress.observer();
    let ticker = progress.spawn_ticker();
    let mut events = match client
        .subscribe("follow", Some(run_id.to_string()), after_seq)
        .await
    {
        Ok(s) => s,
        Err(e) => return Err(CliError::Usage(format!("cannot follow run {run_id}: {e}"))),
    };
    let console = Console::stdio();
    let mut cancel_sent = false;
    // The stages that ended, for the conclusion when the daemon is gone.
    let mut stages = Vec::new();
    // The question being asked here, while events keep flowing: another
    // client (the app) may answer it first.
    let mut asking: Option<(Question, Asking<'_>)> = None;
    let code = loop {
        let pending = async {
            match asking.as_mut() {
                Some((_, ask)) => ask.as_mut().await,
                None => std::future::pending().await,
            }
        };
        let terminated = async {
            match term.as_mut() {
                Some(term) => {
                    term.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        let stop = tokio::select! {
            answer = pending => {
                progress.prompt_closed();
                if let Some((question, _)) = asking.take() {
                    match answer_by(&question, answer) {
                        Some(by) => {
                            if let Err(e) = client
                                .call(QuestionAnswer { question: question.id.clone(), answer: by })
                                .await
                            {
                                eprintln!("error: the answer was not taken: {}", message(&e));
                            }
                        }
                        None => eprintln!(
                            "the question stays open; answer it with: weft answer {run_id} --label LABEL"
                        ),
                    }
                }
                continue;
            }
            event = events.next() => Ok(event),
            _ = tokio::signal::ctrl_c() => Err("interrupted (Ctrl-C)"),
            () = terminated => Err("terminated (SIGTERM)"),
        };
        let event = match stop {
            Ok(event) => event,
            Err(why) => {
                if cancel_sent {
                    eprintln!("detached; the run goes on in weftd (weft events {run_id} --follow)");
                    break Ok(ExitCode::from(EXIT_CANCELLED));
                }
                cancel_sent = true;
                progress.finish();
                eprintln!("{why}: cancelling run {run_id} (again to detach)");
                if let Err(e) = client
                    .call(RunCancel {
                        run: run_id.to_string(),
                    })
                    .await
                {
                    eprintln!("error: the run could not be cancelled: {}", message(&e));
                }
                continue;
            }
        };
        let Some(event) = event else {
            ticker.abort();
            progress.finish();
            break Err(CliError::Usage(format!(
                "lost the connection to weftd; the run goes on (weft events {run_id} --follow)"
            )));
        };
        observe(&event);
        match &event.kind {
            // The daemon answers gates of an --auto-approve run itself.
            EventKind::InterviewStarted { .. } if auto => {}
            EventKind::InterviewStarted { .. } if !on_terminal => {}
            EventKind::InterviewStarted { .. } => {
                if let Some(question) = question_of(&event) {
                    let owned = question.clone();
                    let console = &console;
                    asking = Some((question, Box::pin(async move { console.ask(&owned).await })));
                }
            }
            EventKind::InterviewCompleted { question_id, .. }
            | EventKind::InterviewTimeout { question_id, .. }
            | EventKind::InterviewInterrupted { question_id, .. }
                if asking.as_ref().is_some_and(|(q, _)| q.id == *question_id) =>
            {
                // Answered elsewhere (or timed out): stop asking here.
                asking = None;
            }
            EventKind::StageCompleted {
                status,
                duration_ms,
                ..
            }
            | EventKind::StageFailed {
                status,
                duration_ms,
                ..
            } => stages.push(StageSummary {
                node_id: event.node_id.clone().unwrap_or_default(),
                visit: event.visit.unwrap_or(1),
                outcome: status.as_str().to_string(),
                duration_ms: Some(*duration_ms),
            }),
            EventKind::RunCompleted { .. }
            | EventKind::RunFailed { .. }
            | EventKind::RunCancelled { .. }
            | EventKind::RunInterrupted { .. } => {
                // The end is on screen: no spinner frame after it.
                ticker.abort();
                progress.finish();
                break Ok(finish(client, run, &event, stages, json).await);
            }
            _ => {}
        }
    };
    ticker.abort();
    progress.finish();
    code
}

/// What to send for an answer typed here; `None` when this terminal cannot
/// answer (stdin closed): the question then stays open for another client.
fn answer_by(question: &Question, answer: Answer) -> Option<AnswerBy> {
    match answer {
        Answer::Choice(i) => question
            .choices
            .get(i)
            .map(|c| AnswerBy::Label(c.label.clone())),
        Answer::Freeform(text) => Some(AnswerBy::Text(text)),
        Answer::Interrupted(_) | Answer::Skipped => None,
    }
}

/// The conclusion, printed with `--json`, and the exit code: from the
/// daemon's record of the run, or, when the daemon is gone (it was stopped,
/// and that interrupted the run), from the run's last event.
async fn finish(
    client: &Client,
    followed: &Followed,
    end: &Event,
    seen: Vec<StageSummary>,
    json: bool,
) -> ExitCode {
    let run_id = followed.id.as_str();
    // The status is written just after the final event.
    let mut detail = None;
    for _ in 0..100 {
        match client
            .call(RunGet {
                run: run_id.to_string(),
            })
            .await
        {
            Ok(d) if d.run.status.is_terminal() || d.run.status == RunStatus::Interrupted => {
                detail = Some(d);
                break;
            }
            Ok(_) | Err(ClientError::Rpc(_)) => tokio::time::sleep(Duration::from_millis(10)).await,
            // The daemon is gone: the event says how the run ended.
            Err(_) => break,
        }
    }
    let exit_node = match &end.kind {
        EventKind::RunCompleted { exit_node, .. } => exit_node.clone(),
        _ => None,
    };
    let conclusion = match detail {
        Some(detail) => {
            let run = &detail.run;
            let duration_ms = match (&run.started_at, &run.finished_at) {
                (Some(a), Some(b)) => humantime::parse_rfc3339(b)
                    .ok()
                    .zip(humantime::parse_rfc3339(a).ok())
                    .and_then(|(b, a)| b.duration_since(a).ok())
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                _ => 0,
            };
            Conclusion {
                run_id: run.id.clone(),
                status: run.status,
                duration_ms,
                failure_reason: run.failure_reason.clone(),
                run_dir: run.run_dir.clone(),
                stages: detail
                    .stages
                    .iter()
                    .filter(|s| s.status != "interrupted" && s.status != "running")
                    .map(|s| StageSummary {
                        node_id: s.node_id.clone(),
                        visit: s.visit,
                        outcome: s.status.clone(),
                        duration_ms: s.duration_ms,
                    })
                    .collect(),
                failed_stages: run.failed_stages.clone(),
                exit_node,
            }
        }
        None => {
            let mut failed_stages = Vec::new();
            let (status, duration_ms, failure_reason) = match &end.kind {
                EventKind::RunCompleted {
                    duration_ms,
                    failed_stages: failed,
                    ..
                } => {
                    failed_stages.clone_from(failed);
                    (RunStatus::Succeeded, *duration_ms, None)
                }
                EventKind::RunFailed {
                    reason,
                    duration_ms,
                } => (RunStatus::Failed, *duration_ms, Some(reason.clone())),
                EventKind::RunCancelled {
                    reason,
                    duration_ms,
                } => (RunStatus::Cancelled, *duration_ms, Some(reason.clone())),
                EventKind::RunInterrupted {
                    reason,
                    duration_ms,
                } => (RunStatus::Interrupted, *duration_ms, Some(reason.clone())),
                _ => (RunStatus::Interrupted, 0, None),
            };
            Conclusion {
                run_id: run_id.to_string(),
                status,
                duration_ms,
                failure_reason,
                run_dir: followed.run_dir.clone(),
                stages: seen,
                failed_stages,
                exit_node,
            }
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string(&conclusion).unwrap_or_else(|_| "{}".into())
        );
    }
    run_exit(conclusion.status)
}
