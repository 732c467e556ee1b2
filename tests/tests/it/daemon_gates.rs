//! Answers to human gates through weftd, over the real binaries: many at
//! once, at the earliest moment a question exists, across a daemon crash,
//! and again after the question is closed.

use std::time::{Duration, Instant};

use weft::ipc::client::Client;
use weft::ipc::protocol::{AnswerBy, QuestionAnswer, QuestionList, RunStart, WorkflowSource};
use weft::model::EventKind;
use weft::model::RunStatus;
use weft::store::{Home, QuestionRecord, QuestionStatus, Store};
use weft_tests::{Sandbox, Weftd, wait_for_status};

const GATE: &str = r#"digraph G { start [shape=Mdiamond]; exit [shape=Msquare]
  approve [shape=hexagon, label="Ship it?"]
  ship [shape=parallelogram, script="echo shipped >> shipped.txt"]
  start -> approve
  approve -> ship [label="[S] Ship"]
  approve -> exit [label="[H] Hold"]
  ship -> exit }"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

async fn client(home: &Home) -> Client {
    Client::connect(home)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

async fn start_gate(client: &Client, sb: &Sandbox) -> String {
    client
        .call(RunStart::new(
            WorkflowSource::Source(GATE.into()),
            sb.path(),
        ))
        .await
        .unwrap_or_else(|e| panic!("run.start: {e}"))
        .run_id
}

/// The run's pending question, once it has one.
fn pending_question(home: &Home, run_id: &str) -> QuestionRecord {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let open = Store::open_read_only(home)
            .and_then(|s| s.questions(Some(run_id), true))
            .unwrap_or_default();
        if let Some(q) = open.into_iter().next() {
            return q;
        }
        assert!(Instant::now() < deadline, "run {run_id} asked nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_hundred_concurrent_answers_to_one_question_all_get_the_recorded_answer() {
    let sb = Sandbox::new();
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    let rt = runtime();
    let run_id = rt.block_on(async { start_gate(&client(&home).await, &sb).await });
    let question = pending_question(&home, &run_id);
    let answers = rt.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..100 {
            clients.push(client(&home).await);
        }
        // All sent before any reply is read, each on its own connection.
        let mut calls = tokio::task::JoinSet::new();
        for (i, c) in clients.into_iter().enumerate() {
            // The same choice, by key or by label.
            let answer = if i % 2 == 0 {
                AnswerBy::Key("s".into())
            } else {
                AnswerBy::Label("Ship".into())
            };
            let question = question.id.clone();
            calls.spawn(async move { c.call(QuestionAnswer { question, answer }).await });
        }
        calls.join_all().await
    });
    let failed: Vec<String> = answers
        .iter()
        .filter_map(|a| a.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 100 failed: {failed:?}",
        failed.len()
    );
    for answer in answers.into_iter().flatten() {
        assert_eq!(answer.status, QuestionStatus::Answered);
        assert_eq!(
            answer.answer,
            Some(serde_json::json!({"choice": "[S] Ship"}))
        );
    }
    wait_for_status(&home, &run_id, RunStatus::Succeeded);
    assert_eq!(
        std::fs::read_to_string(sb.path().join("shipped.txt")).unwrap_or_default(),
        "shipped\n",
        "shipped once"
    );
}

#[test]
fn a_question_answered_the_moment_its_event_arrives_is_delivered_every_time() {
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "max_concurrent_runs = 8\n");
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    const RUNS: usize = 60;
    let runs = runtime().block_on(async {
        let watcher = client(&home).await;
        let answerer = client(&home).await;
        // Subscribed before any run starts: every question's event arrives,
        // and is answered before anything else is read.
        let mut events = watcher
            .subscribe("all", None, 0)
            .await
            .unwrap_or_else(|e| panic!("subscribe: {e}"));
        let starter = client(&home).await;
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            runs.push(start_gate(&starter, &sb).await);
        }
        let mut answered = 0;
        let mut completed = Vec::new();
        while completed.len() < RUNS {
            let event = tokio::time::timeout(Duration::from_secs(120), events.next())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "stuck: {answered} answered, {} completed; {}",
                        completed.len(),
                        unfinished(&home, &runs, &completed, &daemon)
                    )
                })
                .unwrap_or_else(|| panic!("the subscription ended"));
            match event.kind {
                EventKind::InterviewStarted { question_id, .. } => {
                    let answer = answerer
                        .call(QuestionAnswer {
                            question: question_id.clone(),
                            answer: AnswerBy::Key("S".into()),
                        })
                        .await
                        .unwrap_or_else(|e| panic!("answering {question_id}: {e}"));
                    assert_eq!(answer.status, QuestionStatus::Answered);
                    answered += 1;
                }
                EventKind::RunCompleted { .. } => completed.push(event.run_id.clone()),
                EventKind::RunFailed { reason, .. } => panic!("a run failed: {reason}"),
                _ => {}
            }
        }
        assert_eq!(answered, RUNS);
        runs
    });
    for run in &runs {
        wait_for_status(&home, run, RunStatus::Succeeded);
    }
    assert_eq!(
        std::fs::read_to_string(sb.path().join("shipped.txt"))
            .unwrap_or_default()
            .lines()
            .count(),
        RUNS,
        "every run took the answer and shipped"
    );
}

/// What the store says of the runs whose completion never arrived, and the
/// daemon's log: what a stuck run needs to be diagnosed.
fn unfinished(home: &Home, runs: &[String], completed: &[String], daemon: &Weftd) -> String {
    let store = Store::open_read_only(home);
    let mut report = String::new();
    for run in runs.iter().filter(|r| !completed.contains(r)) {
        let (status, events) = match &store {
            Ok(s) => (
                s.run(run)
                    .map(|r| format!("{:?}", r.map(|r| r.status)))
                    .map_err(|e| e.to_string()),
                s.events(run, 0, Some(1000))
                    .map(|e| {
                        e.iter()
                            .map(|e| e.kind.name().to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .map_err(|e| e.to_string()),
            ),
            Err(e) => (Err(e.to_string()), Err(e.to_string())),
        };
        report += &format!("\nrun {run}: status {status:?}; events {events:?}");
    }
    format!("{report}\ndaemon log:\n{}", daemon.log_text())
}

#[test]
fn answers_given_right_after_a_daemon_crash_are_kept_until_the_runs_ask_again() {
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "max_concurrent_runs = 25\n");
    let mut daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    const RUNS: usize = 20;
    let runs: Vec<String> = runtime().block_on(async {
        let c = client(&home).await;
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            runs.push(start_gate(&c, &sb).await);
        }
        runs
    });
    let questions: Vec<QuestionRecord> = runs.iter().map(|r| pending_question(&home, r)).collect();
    daemon.signal("-KILL");
    let _ = daemon.child.wait();
    // One run at a time after the restart: the others wait as queued, their
    // questions still pending from before the crash and not asked again.
    sb.write("home/settings.toml", "max_concurrent_runs = 1\n");
    let restarted = Weftd::start(&sb);
    // Answered at once, each exactly once: the restarted daemon is resuming
    // the runs, and most have not reached their gate again yet.
    let answers = runtime().block_on(async {
        let c = client(&home).await;
        let mut answers = Vec::new();
        for q in &questions {
            answers.push(
                c.call(QuestionAnswer {
                    question: q.id.clone(),
                    answer: AnswerBy::Label("Ship".into()),
                })
                .await,
            );
        }
        answers
    });
    let failed: Vec<String> = answers
        .iter()
        .filter_map(|a| a.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {RUNS} answers were refused: {failed:?}",
        failed.len()
    );
    for run in &runs {
        wait_for_status(&home, run, RunStatus::Succeeded);
    }
    let store = Store::open_read_only(&home).unwrap_or_else(|e| panic!("{e}"));
    for q in &questions {
        let all = store.questions(Some(&q.run_id), false).unwrap_or_default();
        assert_eq!(all.len(), 1, "asked again under the same id: {all:?}");
        assert_eq!(
            all[0].answer,
            Some(serde_json::json!({"choice": "[S] Ship"}))
        );
    }
    drop(restarted);
}

#[test]
fn answering_a_closed_question_otherwise_fails_and_says_what_was_recorded() {
    let sb = Sandbox::new();
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    let run_id = runtime().block_on(async { start_gate(&client(&home).await, &sb).await });
    let question = pending_question(&home, &run_id);
    let first = sb.run(&["answer", &run_id, "--key", "S"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    wait_for_status(&home, &run_id, RunStatus::Succeeded);

    let other = sb.run(&["answer", &run_id, "--question", &question.id, "--key", "H"]);
    assert_eq!(other.code, 1, "another choice is refused: {other:?}");
    assert!(
        other.stderr.contains("already answered") && other.stderr.contains("[S] Ship"),
        "it says what was recorded: {}",
        other.stderr
    );
    let same = sb.run(&[
        "answer",
        &run_id,
        "--question",
        &question.id,
        "--label",
        "Ship",
    ]);
    assert_eq!(same.code, 0, "the same answer again is fine: {same:?}");
    // Through the protocol: the record rides along with the error.
    let error = runtime()
        .block_on(async {
            client(&home)
                .await
                .call(QuestionAnswer {
                    question: question.id.clone(),
                    answer: AnswerBy::Key("H".into()),
                })
                .await
        })
        .expect_err("closed");
    assert_eq!(error.code(), "question.closed");
    let listed = runtime().block_on(async {
        client(&home)
            .await
            .call(QuestionList {
                run: Some(run_id.clone()),
                pending_only: false,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    });
    assert_eq!(
        listed[0].answer,
        Some(serde_json::json!({"choice": "[S] Ship"})),
        "the first answer stands"
    );
}
