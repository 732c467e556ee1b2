//! `weft run` and `weft resume` through the daemon: start (or resume) the
//! run in weftd, then follow its events with the same progress display as
//! an in-process run, answering human gates from this terminal.

use std::time::Duration;

use super::progress::{Gates, Progress, question_of};
use super::run::{EXIT_CANCELLED, EXIT_FAILED};
use super::{EXIT_OK, EXIT_USAGE};
use crate::engine::event::EventKind;
use crate::engine::interviewer::{Answer, Console, Interviewer, Question};
use crate::engine::{Conclusion, RunRequest, StageSummary};
use crate::ipc::client::{Client, ClientError};
use crate::ipc::protocol::{
    AnswerBy, CallerEnv, QuestionAnswer, RunCancel, RunGet, RunResume, RunStart, RunStarted,
    WorkflowSource,
};
use crate::store::{Home, RunStatus};

/// Connects to the daemon, starting it first when it is not running (and
/// saying so on stderr).
pub async fn connect(home: &Home) -> Result<Client, String> {
    match Client::connect(home).await {
        Ok(client) => Ok(client),
        Err(ClientError::DaemonNotRunning { .. }) => {
            let (info, _) =
                crate::server::detach::start_detached(home, &super::daemon::weftd_path()).await?;
            eprintln!(
                "started weftd (pid {}, socket {})",
                info.pid,
                info.socket_path.display()
            );
            Client::connect(home).await.map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// `weft run` through the daemon.
pub async fn run(request: RunRequest, json: bool, detach: bool) -> u8 {
    let Some(path) = request.workflow_path.clone() else {
        eprintln!("error: the workflow has no path");
        return EXIT_USAGE;
    };
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
    params.env = CallerEnv::current();
    let home = match super::home() {
        Ok(h) => h,
        Err(code) => return code,
    };
    let client = match connect(&home).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "error: cannot reach weftd: {e}\n  (run without it: weft run --no-daemon ...)"
            );
            return EXIT_USAGE;
        }
    };
    let started: RunStarted = match client.call(params).await {
        Ok(s) => s,
        Err(ClientError::Rpc(e)) => {
            eprintln!("error: {}", e.message);
            let listed = e
                .data
                .as_ref()
                .and_then(|d| d.details.get("diagnostics"))
                .and_then(serde_json::Value::as_array);
            for d in listed.into_iter().flatten() {
                eprintln!(
                    "  {}:{}: {}",
                    d["line"].as_u64().unwrap_or(0),
                    d["column"].as_u64().unwrap_or(0),
                    d["message"].as_str().unwrap_or("")
                );
            }
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
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
        return EXIT_OK;
    }
    follow(&client, &started.run_id, 0, json, auto).await
}

/// `weft resume` through the daemon.
pub async fn resume(run: &str, auto_approve: bool, json: bool) -> u8 {
    let home = match super::home() {
        Ok(h) => h,
        Err(code) => return code,
    };
    let client = match connect(&home).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot reach weftd: {e}");
            return EXIT_USAGE;
        }
    };
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
        Err(e) => {
            eprintln!("error: {}", message(&e));
            return EXIT_USAGE;
        }
    };
    let params = RunResume {
        run: run.to_string(),
        auto_approve,
        env: CallerEnv::current(),
    };
    match client.call(params).await {
        Ok(started) => {
            follow(
                &client,
                &started.run_id,
                before,
                json,
                auto_approve || stored_auto,
            )
            .await
        }
        Err(e) => {
            eprintln!("error: {}", message(&e));
            EXIT_USAGE
        }
    }
}

fn message(e: &ClientError) -> String {
    match e {
        ClientError::Rpc(rpc) => rpc.message.clone(),
        other => other.to_string(),
    }
}

/// A question being asked on this terminal.
type Asking<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send + 'a>>;

/// Follows a run's events until it ends, showing progress and asking its
/// questions here. Ctrl-C cancels the run (a second Ctrl-C detaches).
async fn follow(client: &Client, run_id: &str, after_seq: u64, json: bool, auto: bool) -> u8 {
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
        Err(e) => {
            eprintln!("error: cannot follow run {run_id}: {e}");
            return EXIT_USAGE;
        }
    };
    let console = Console::stdio();
    let mut cancel_sent = false;
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
        let event = tokio::select! {
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
            event = events.next() => event,
            _ = tokio::signal::ctrl_c() => {
                if cancel_sent {
                    eprintln!("detached; the run goes on in weftd (weft events {run_id} --follow)");
                    break EXIT_CANCELLED;
                }
                cancel_sent = true;
                eprintln!("cancelling run {run_id} (Ctrl-C again to detach)");
                let _ = client.call(RunCancel { run: run_id.to_string() }).await;
                continue;
            }
        };
        let Some(event) = event else {
            eprintln!(
                "error: lost the connection to weftd; the run goes on (weft events {run_id} --follow)"
            );
            break EXIT_USAGE;
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
            EventKind::RunCompleted { .. }
            | EventKind::RunFailed { .. }
            | EventKind::RunCancelled { .. }
            | EventKind::RunInterrupted { .. } => {
                break finish(client, run_id, json).await;
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

/// The conclusion, printed with `--json`, and the exit code.
async fn finish(client: &Client, run_id: &str, json: bool) -> u8 {
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
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    let Some(detail) = detail else {
        eprintln!("error: run {run_id} ended but its status could not be read");
        return EXIT_USAGE;
    };
    let run = &detail.run;
    let duration_ms = match (&run.started_at, &run.finished_at) {
        (Some(a), Some(b)) => humantime::parse_rfc3339(b)
            .ok()
            .zip(humantime::parse_rfc3339(a).ok())
            .and_then(|(b, a)| b.duration_since(a).ok())
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        _ => 0,
    };
    let conclusion = Conclusion {
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
    };
    if json {
        println!(
            "{}",
            serde_json::to_string(&conclusion).unwrap_or_else(|_| "{}".into())
        );
    }
    match conclusion.status {
        RunStatus::Succeeded => EXIT_OK,
        RunStatus::Cancelled | RunStatus::Interrupted => EXIT_CANCELLED,
        _ => EXIT_FAILED,
    }
}
