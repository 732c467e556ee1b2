//! weftd over its real socket: the real daemon binary on a temp WEFT_HOME,
//! driven by the library's client (as the CLI and the app are) and by raw
//! socket writes for the malformed cases.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use weft::ipc::client::Client;
use weft::ipc::paths::DaemonPaths;
use weft::ipc::protocol::{
    AnswerBy, DaemonStatus, QuestionAnswer, QuestionList, RunArchive, RunCancel, RunEvents, RunGet,
    RunList, RunResume, RunStart, WorkflowSource,
};
use weft::model::{EventKind, RunStatus};
use weft::store::{Home, QuestionStatus};
use weft_tests::{Sandbox, binary, lcg, side_effect_chain, wait_for_status};

/// A weftd in the foreground on a sandbox's home; killed when dropped.
struct Daemon {
    child: Child,
    home: Home,
}

impl Daemon {
    fn start(sb: &Sandbox) -> Daemon {
        let home = Home::at(sb.path().join("home"));
        let child = Command::new(binary("weftd"))
            .arg("--foreground")
            .env("WEFT_HOME", home.root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn weftd: {e}"));
        let socket = DaemonPaths::for_home(&home).socket;
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&socket).is_err() {
            assert!(Instant::now() < deadline, "weftd did not start listening");
            std::thread::sleep(Duration::from_millis(10));
        }
        Daemon { child, home }
    }

    fn socket(&self) -> PathBuf {
        DaemonPaths::for_home(&self.home).socket
    }

    /// SIGTERM, then wait for the exit.
    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

fn start_params(sb: &Sandbox, source: &str) -> RunStart {
    RunStart::new(WorkflowSource::Source(source.into()), sb.path())
}

const GATE: &str = r#"digraph G { start [shape=Mdiamond]; exit [shape=Msquare]
  build [shape=parallelogram, script="echo built"]
  approve [shape=hexagon, label="Ship it?"]
  ship [shape=parallelogram, script="echo shipped > shipped.txt"]
  start -> build -> approve
  approve -> ship [label="[S] Ship"]
  approve -> exit [label="[H] Hold"]
  ship -> exit }"#;

#[test]
fn a_subscription_receives_every_event_of_a_run_in_order_without_gaps() {
    let sb = Sandbox::new();
    let daemon = Daemon::start(&sb);
    runtime().block_on(async {
        let client = Client::connect(&daemon.home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let source = r#"digraph L { start [shape=Mdiamond]; exit [shape=Msquare]
            a [shape=parallelogram, script="echo a"]
            b [shape=parallelogram, script="echo b"]
            start -> a -> b -> exit }"#;
        let started = client
            .call(start_params(&sb, source))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut sub = client
            .subscribe("s1", Some(started.run_id.clone()), 0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut seen = Vec::new();
        while let Some(event) = tokio::time::timeout(Duration::from_secs(20), sub.next())
            .await
            .unwrap_or_else(|_| panic!("no event in time; saw {seen:?}"))
        {
            let done = matches!(
                event.kind,
                EventKind::RunCompleted { .. } | EventKind::RunFailed { .. }
            );
            seen.push(event);
            if done {
                break;
            }
        }
        let stored = client
            .call(RunEvents {
                run: started.run_id.clone(),
                after_seq: 0,
                limit: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            seen, stored.events,
            "the subscription saw exactly the events table"
        );
        let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
        let detail = client
            .call(RunGet {
                run: started.run_id[..10].to_lowercase(),
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(detail.run.status, RunStatus::Succeeded);
        assert_eq!(detail.stages.len(), 4);
    });
}

#[test]
fn a_second_client_answers_a_gate_while_the_first_watches_and_answers_are_idempotent() {
    let sb = Sandbox::new();
    let daemon = Daemon::start(&sb);
    runtime().block_on(async {
        let watcher = Client::connect(&daemon.home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let started = watcher
            .call(start_params(&sb, GATE))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut sub = watcher
            .subscribe("watch", Some(started.run_id.clone()), 0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let answerer = Client::connect(&daemon.home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let question = loop {
            let pending = answerer
                .call(QuestionList {
                    run: Some(started.run_id.clone()),
                    pending_only: true,
                })
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            if let Some(q) = pending.into_iter().next() {
                break q;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(question.text, "Ship it?");
        let wrong = answerer
            .call(QuestionAnswer {
                question: question.id.clone(),
                answer: AnswerBy::Key("Z".into()),
            })
            .await;
        assert!(wrong.is_err(), "an option that does not exist is refused");
        let answered = answerer
            .call(QuestionAnswer {
                question: question.id.clone(),
                answer: AnswerBy::Label("Ship".into()),
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answered.status, QuestionStatus::Answered);
        let mut names = Vec::new();
        while let Some(event) = tokio::time::timeout(Duration::from_secs(20), sub.next())
            .await
            .unwrap_or_else(|_| panic!("no event in time; saw {names:?}"))
        {
            names.push(event.kind.name().to_string());
            if names.last().is_some_and(|n| n == "run.completed") {
                break;
            }
        }
        assert!(
            names.contains(&"interview.completed".to_string()),
            "{names:?}"
        );
        assert!(
            sb.path().join("shipped.txt").is_file(),
            "the Ship edge was taken"
        );
        let again = answerer
            .call(QuestionAnswer {
                question: question.id.clone(),
                answer: AnswerBy::Key("S".into()),
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            again.answer, answered.answer,
            "answering again returns the recorded answer"
        );
        let otherwise = answerer
            .call(QuestionAnswer {
                question: question.id.clone(),
                answer: AnswerBy::Key("H".into()),
            })
            .await
            .expect_err("another answer to an answered question is refused");
        assert_eq!(otherwise.code(), "question.closed");
    });
}

#[test]
fn runs_beyond_the_limit_wait_as_queued_and_then_run() {
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "max_concurrent_runs = 1\n");
    let daemon = Daemon::start(&sb);
    runtime().block_on(async {
        let client = Client::connect(&daemon.home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let slow = r#"digraph S { start [shape=Mdiamond]; exit [shape=Msquare]
            nap [shape=parallelogram, script="sleep 0.5"]
            start -> nap -> exit }"#;
        let first = client
            .call(start_params(&sb, slow))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let second = client
            .call(start_params(&sb, slow))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let status = client
            .call(DaemonStatus {})
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((status.runs_running, status.runs_queued), (1, 1));
        let queued = client
            .call(RunGet {
                run: second.run_id.clone(),
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(queued.run.status, RunStatus::Queued);
        for id in [first.run_id, second.run_id] {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let run = client
                    .call(RunGet { run: id.clone() })
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                if run.run.status == RunStatus::Succeeded {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "run {id} did not finish: {:?}",
                    run.run.status
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
}

#[test]
fn a_cancelled_run_can_be_resumed_over_the_socket() {
    let sb = Sandbox::new();
    let daemon = Daemon::start(&sb);
    runtime().block_on(async {
        let client = Client::connect(&daemon.home).await.unwrap_or_else(|e| panic!("{e}"));
        let source = r#"digraph C { start [shape=Mdiamond]; exit [shape=Msquare]
            first [shape=parallelogram, script="echo first >> side.log"]
            wait [shape=parallelogram, script="if [ -f go ]; then echo done >> side.log; else sleep 30; fi"]
            start -> first -> wait -> exit }"#;
        let started = client.call(start_params(&sb, source)).await.unwrap_or_else(|e| panic!("{e}"));
        let status_of = |id: String| {
            let client = &client;
            async move { client.call(RunGet { run: id }).await.map(|d| d.run.status) }
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default().contains("first") {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        client.call(RunCancel { run: started.run_id.clone() }).await.unwrap_or_else(|e| panic!("{e}"));
        while status_of(started.run_id.clone()).await.ok() != Some(RunStatus::Cancelled) {
            assert!(Instant::now() < deadline, "not cancelled");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        sb.write("go", "");
        client
            .call(RunResume { run: started.run_id.clone(), auto_approve: false, env: Default::default() })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        while status_of(started.run_id.clone()).await.ok() != Some(RunStatus::Succeeded) {
            assert!(Instant::now() < deadline, "not resumed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default(),
            "first\ndone\n"
        );
    });
}

/// Sends raw bytes and reads one reply line.
fn raw(socket: &std::path::Path, bytes: &[u8]) -> serde_json::Value {
    let mut stream = UnixStream::connect(socket).unwrap_or_else(|e| panic!("connect: {e}"));
    stream
        .write_all(bytes)
        .unwrap_or_else(|e| panic!("write: {e}"));
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("read: {e}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("reply is not JSON ({e}): {line}"))
}

#[test]
fn bad_input_gets_error_replies_and_the_daemon_keeps_serving() {
    let sb = Sandbox::new();
    let daemon = Daemon::start(&sb);
    let socket = daemon.socket();
    assert_eq!(
        raw(&socket, b"{not json\n")["error"]["data"]["code"],
        "rpc.parse_error"
    );
    assert_eq!(
        raw(
            &socket,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"run.fly\"}\n"
        )["error"]["data"]["code"],
        "rpc.method_not_found"
    );
    let mut huge = vec![b'x'; 10 * 1024 * 1024];
    huge.push(b'\n');
    huge.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"daemon.status\"}\n");
    let mut stream = UnixStream::connect(&socket).unwrap_or_else(|e| panic!("{e}"));
    stream.write_all(&huge).unwrap_or_else(|e| panic!("{e}"));
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("{e}"));
    let first: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first["error"]["data"]["code"], "rpc.too_long");
    let mut second = String::new();
    reader
        .read_line(&mut second)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        second.contains("\"pid\""),
        "the same connection still works: {second}"
    );
    // A client that vanishes mid-line affects nobody.
    let mut rude = UnixStream::connect(&socket).unwrap_or_else(|e| panic!("{e}"));
    rude.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"meth")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(rude);
    let status = raw(
        &socket,
        b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"daemon.status\"}\n",
    );
    assert_eq!(status["id"], 4);
}

#[test]
fn the_socket_is_private_one_daemon_runs_per_home_and_a_stale_socket_is_replaced() {
    let sb = Sandbox::new();
    let mut daemon = Daemon::start(&sb);
    let socket = daemon.socket();
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0)
    };
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(socket.parent().unwrap_or(&socket)), 0o700);

    let second = Command::new(binary("weftd"))
        .arg("--foreground")
        .env("WEFT_HOME", daemon.home.root())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("already running") && said.contains(&daemon.child.id().to_string()),
        "{said}"
    );

    // Killed without cleaning up: the socket file stays; the next daemon
    // replaces it.
    let _ = daemon.child.kill();
    let _ = daemon.child.wait();
    assert!(socket.exists(), "a stale socket was left behind");
    let replacement = Daemon::start(&sb);
    assert_eq!(
        raw(
            &replacement.socket(),
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}\n"
        )["id"],
        1
    );
    let _ = &mut daemon;
}

#[test]
fn stopping_the_daemon_interrupts_runs_and_the_next_start_resumes_them() {
    let sb = Sandbox::new();
    let mut daemon = Daemon::start(&sb);
    let source = r#"digraph R { start [shape=Mdiamond]; exit [shape=Msquare]
        first [shape=parallelogram, script="echo first >> side.log"]
        wait [shape=parallelogram, script="if [ -f go ]; then echo done >> side.log; else sleep 30; fi"]
        start -> first -> wait -> exit }"#;
    let run_id = runtime().block_on(async {
        let client = Client::connect(&daemon.home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        client
            .call(start_params(&sb, source))
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .run_id
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(sb.path().join("side.log"))
        .unwrap_or_default()
        .contains("first")
    {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    daemon.terminate();
    let store = weft::store::Store::open_read_only(&daemon.home).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        store.find_run(&run_id).map(|r| r.status).ok(),
        Some(RunStatus::Interrupted)
    );
    drop(store);
    sb.write("go", "");
    let restarted = Daemon::start(&sb);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let store =
            weft::store::Store::open_read_only(&restarted.home).unwrap_or_else(|e| panic!("{e}"));
        if store.find_run(&run_id).map(|r| r.status).ok() == Some(RunStatus::Succeeded) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the interrupted run was not resumed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default(),
        "first\ndone\n",
        "resumed, not restarted"
    );
}

#[test]
fn runs_survive_the_daemon_being_killed_at_random_moments() {
    const NODES: usize = 30;
    let expected: Vec<String> = std::iter::once("start".to_string())
        .chain((0..NODES).map(|i| format!("n{i}")))
        .chain(std::iter::once("exit".to_string()))
        .collect();
    let mut interrupted = 0;
    for seed in 0..20u64 {
        let sb = Sandbox::new();
        let mut daemon = Daemon::start(&sb);
        let run_id = runtime().block_on(async {
            let client = Client::connect(&daemon.home)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            client
                .call(start_params(&sb, &side_effect_chain(NODES)))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .run_id
        });
        // By progress, not by time, so a fast or a busy machine cannot push
        // the kills past the run's end: after `after_stages` side effects,
        // plus a few milliseconds.
        let after_stages = usize::try_from(lcg(seed) % (NODES as u64 - 1)).unwrap_or(0);
        let side_log = sb.path().join("side.log");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&side_log)
            .unwrap_or_default()
            .lines()
            .count()
            < after_stages
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(lcg(seed + 100) % 4));
        let _ = daemon.child.kill();
        let _ = daemon.child.wait();
        let home = daemon.home.clone();
        let before: Vec<(String, String)> = weft::store::Store::open_read_only(&home)
            .and_then(|s| s.stages(&run_id))
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.node_id, s.status))
            .collect();
        let status = weft::store::Store::open_read_only(&home)
            .ok()
            .and_then(|s| s.find_run(&run_id).ok())
            .map(|r| r.status);
        if status != Some(RunStatus::Succeeded) {
            interrupted += 1;
        }
        let _restarted = Daemon::start(&sb);
        wait_for_status(&home, &run_id, RunStatus::Succeeded);
        let store = weft::store::Store::open_read_only(&home).unwrap_or_else(|e| panic!("{e}"));
        let stages: Vec<String> = store
            .stages(&run_id)
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.node_id)
            .collect();
        assert_eq!(
            stages, expected,
            "seed {seed}: the same stages as an uninterrupted run"
        );
        let side = std::fs::read_to_string(sb.path().join("side.log")).unwrap_or_default();
        for i in 0..NODES {
            let node = format!("n{i}");
            let count = side.lines().filter(|l| *l == node).count();
            let committed = before.iter().any(|(n, s)| *n == node && s == "succeeded");
            let in_flight = before.iter().any(|(n, s)| *n == node && s == "running");
            if committed {
                assert_eq!(
                    count, 1,
                    "seed {seed}: {node} was committed before the kill and ran again"
                );
            } else if in_flight {
                assert!(
                    (1..=2).contains(&count),
                    "seed {seed}: {node} ran {count} times"
                );
            } else {
                assert_eq!(count, 1, "seed {seed}: {node} ran {count} times");
            }
        }
    }
    assert!(
        interrupted >= 15,
        "only {interrupted} of 20 kills landed mid-run"
    );
}

#[test]
fn a_pending_gate_survives_a_daemon_crash_with_the_same_question_id() {
    let sb = Sandbox::new();
    let mut daemon = Daemon::start(&sb);
    let home = daemon.home.clone();
    let (run_id, question) = runtime().block_on(async {
        let client = Client::connect(&home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let started = client
            .call(start_params(&sb, GATE))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        loop {
            let open = client
                .call(QuestionList {
                    run: Some(started.run_id.clone()),
                    pending_only: true,
                })
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            if let Some(q) = open.into_iter().next() {
                break (started.run_id, q);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let _ = daemon.child.kill();
    let _ = daemon.child.wait();
    let _restarted = Daemon::start(&sb);
    runtime().block_on(async {
        let client = Client::connect(&home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        // The resumed run asks again, under the same id.
        loop {
            let answered = client
                .call(QuestionAnswer {
                    question: question.id.clone(),
                    answer: AnswerBy::Key("S".into()),
                })
                .await;
            if answered.is_ok() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the question never came back: {answered:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let open = client
            .call(QuestionList {
                run: Some(run_id.clone()),
                pending_only: false,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            open.len(),
            1,
            "still one question, not a second one: {open:?}"
        );
    });
    wait_for_status(&home, &run_id, RunStatus::Succeeded);
    assert!(sb.path().join("shipped.txt").is_file());
}

#[test]
fn a_connection_from_another_user_is_refused_even_when_the_socket_is_opened_up() {
    if !rustix_is_root() {
        eprintln!("skipped: only root can connect as another user");
        return;
    }
    let sb = Sandbox::new();
    let daemon = Daemon::start(&sb);
    let socket = daemon.socket();
    // Loosen every permission on the way to the socket, as a careless
    // `chmod -R` would: only the peer check is left to keep others out.
    use std::os::unix::fs::PermissionsExt;
    let mut dir = Some(socket.as_path());
    while let Some(path) = dir {
        if !path.starts_with(sb.path()) && path != socket {
            break;
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
        dir = path.parent();
    }
    let client = |user: &[&str]| {
        let script = format!(
            "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({socket:?})\n\
             s.settimeout(5)\ntry:\n    \
             s.sendall(b'{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}}\\n')\n    \
             print(s.recv(65536).decode() or 'closed')\n\
             except (ConnectionResetError, BrokenPipeError):\n    print('closed')",
            socket = socket.display().to_string()
        );
        let output = Command::new("setpriv")
            .args(user)
            .args(["--", "/usr/bin/python3", "-c", &script])
            .output()
            .unwrap_or_else(|e| panic!("setpriv: {e}"));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
            + &String::from_utf8_lossy(&output.stderr)
    };
    let nobody = client(&["--reuid=65534", "--regid=65534", "--clear-groups"]);
    assert_eq!(
        nobody, "closed",
        "another user's connection is closed unanswered"
    );
    let me = client(&[]);
    assert!(
        me.contains("\"result\""),
        "the daemon's own user is still served: {me}"
    );
}

/// Whether this test runs as root (uid 0).
fn rustix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn an_archived_run_leaves_the_apps_list_and_comes_back_when_unarchived() {
    let sb = Sandbox::new();
    let daemon = Daemon::start(&sb);
    let source = r#"digraph A { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }"#;
    runtime().block_on(async {
        let client = Client::connect(&daemon.home)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let kept = client
            .call(start_params(&sb, source))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let archived = client
            .call(start_params(&sb, source))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        wait_for_status(&daemon.home, &archived.run_id, RunStatus::Succeeded);
        wait_for_status(&daemon.home, &kept.run_id, RunStatus::Succeeded);
        let summary = client
            .call(RunArchive {
                run: archived.run_id.clone(),
                archived: true,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(summary.archived);

        // What the app's list asks for: unarchived runs only.
        let views = weft::views::Views::open(&daemon.home).unwrap_or_else(|e| panic!("{e}"));
        let listed = |archived: Option<bool>| {
            views
                .runs(&RunList {
                    archived,
                    ..RunList::default()
                })
                .unwrap_or_else(|e| panic!("{e}"))
                .runs
                .into_iter()
                .map(|r| r.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(listed(Some(false)), std::slice::from_ref(&kept.run_id));
        assert_eq!(listed(Some(true)), std::slice::from_ref(&archived.run_id));
        assert_eq!(listed(None).len(), 2, "absent means both");

        client
            .call(RunArchive {
                run: archived.run_id.clone(),
                archived: false,
            })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(listed(Some(false)).len(), 2, "unarchived runs are back");
        let missing = client
            .call(RunArchive {
                run: "ZZZZ".into(),
                archived: true,
            })
            .await;
        assert!(missing.is_err_and(|e| e.code() == "run.not_found"));
    });
}
