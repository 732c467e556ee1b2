//! weftd inside the test process: `weft::server::serve` on a temp
//! WEFT_HOME's socket, on a thread of its own (a current-thread runtime and
//! a `LocalSet`, as `weftd --foreground` runs it), driven by the real client
//! (`weft::ipc::Client`), by raw lines on the socket, and by the CLI's
//! `weft run` (`weft::cli::main_from`). No prebuilt binary takes part: a
//! failure points at the connection handling or the CLI's daemon path
//! directly, with its backtrace, and coverage sees them. `tests/tests/it/`
//! drives the same paths through the real binaries.

// A test that cannot set itself up should stop there, with the reason.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft::ipc::protocol::{
    DaemonStatus, DaemonStop, PROTOCOL_VERSION, RunEvents, RunGet, RunStart, RunStarted,
    WorkflowSource,
};
use weft::ipc::{Client, ClientError, DaemonPaths, MAX_FRAME_BYTES};
use weft::model::RunStatus;
use weft::model::{Event, EventKind};
use weft::server::DaemonError;
use weft::store::{Home, Store};

/// How long a test waits for the daemon to do something before it fails.
const PATIENCE: Duration = Duration::from_secs(120);

/// Three command stages, each appending its name to `side.log` in the
/// working directory.
const CHAIN: &str = r#"digraph Chain {
    start [shape=Mdiamond]; exit [shape=Msquare]
    a [shape=parallelogram, script="echo a >> side.log"]
    b [shape=parallelogram, script="echo b >> side.log"]
    c [shape=parallelogram, script="echo c >> side.log"]
    start -> a -> b -> c -> exit
}"#;

/// A daemon this process serves on `home`. Dropping it stops it and waits
/// for its thread.
struct InProcessDaemon {
    home: Home,
    socket: PathBuf,
    thread: Option<JoinHandle<Result<(), DaemonError>>>,
}

impl InProcessDaemon {
    /// Serves `home` on a new thread and waits until the socket answers.
    fn start(home: Home) -> InProcessDaemon {
        let socket = DaemonPaths::for_home(&home).socket;
        let served = home.clone();
        let thread = std::thread::Builder::new()
            .name("weftd".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the daemon's runtime");
                let local = tokio::task::LocalSet::new();
                let served = local.block_on(&rt, weft::server::serve(served));
                // Commands may still hold blocking reads, as in weftd.
                rt.shutdown_timeout(Duration::from_millis(200));
                served
            })
            .expect("the daemon's thread");
        let mut daemon = InProcessDaemon {
            home,
            socket,
            thread: Some(thread),
        };
        let deadline = Instant::now() + PATIENCE;
        while !answers(&daemon.socket) {
            if let Some(thread) = daemon.thread.take_if(|t| t.is_finished()) {
                panic!("the daemon ended before it listened: {:?}", thread.join());
            }
            assert!(Instant::now() < deadline, "the daemon does not answer");
            std::thread::sleep(Duration::from_millis(10));
        }
        daemon
    }

    /// Stops it with `daemon.stop`, as `weft daemon stop` does, and returns
    /// what `serve` returned.
    fn stop(mut self) -> Result<(), DaemonError> {
        let thread = self.thread.take().expect("running");
        let stopping = block_on(async {
            let client = Client::connect(&self.home).await.expect("connect");
            client.call(DaemonStop {}).await
        });
        assert_eq!(
            stopping.expect("daemon.stop is answered").pid,
            std::process::id()
        );
        thread.join().expect("the daemon's thread does not panic")
    }
}

impl Drop for InProcessDaemon {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            if let Ok(mut stream) = UnixStream::connect(&self.socket) {
                let _ = stream
                    .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.stop\"}\n");
            }
            let _ = thread.join();
        }
    }
}

/// Whether a daemon answers `daemon.status` on `socket`.
fn answers(socket: &Path) -> bool {
    let Ok(stream) = UnixStream::connect(socket) else {
        return false;
    };
    let mut line = RawLine::over(stream);
    line.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.status\"}\n");
    line.recv().get("result").is_some()
}

/// One connection spoken to a line at a time, for what the library client
/// never sends.
struct RawLine {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl RawLine {
    fn over(stream: UnixStream) -> RawLine {
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("a read timeout");
        let writer = stream.try_clone().expect("the socket, twice");
        RawLine {
            reader: BufReader::new(stream),
            writer,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("the daemon reads");
    }

    /// The next line, as JSON (`null` when the daemon hung up).
    fn recv(&mut self) -> Value {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => Value::Null,
            Ok(_) => serde_json::from_str(&line).expect("the daemon writes JSON lines"),
        }
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// A fresh WEFT_HOME, private as Weft makes its own (an open one gets
/// tightened, with a notice).
fn temp_home() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
        .expect("a private home");
    dir
}

#[test]
fn a_request_gets_its_reply_from_the_daemon_serving_this_process() {
    let dir = temp_home();
    let daemon = InProcessDaemon::start(Home::at(dir.path()));
    block_on(async {
        let client = Client::connect(&daemon.home).await.expect("connect");
        let info = client.call(DaemonStatus {}).await.expect("daemon.status");
        assert_eq!(info.pid, std::process::id(), "served by this process");
        assert_eq!(info.protocol, PROTOCOL_VERSION);
        assert_eq!(info.socket_path, daemon.socket);
        assert_eq!((info.runs_running, info.runs_queued), (0, 0));
        // An error reply is a reply too, with its stable code.
        let missing = client
            .call(RunGet {
                run: "01JNOSUCHRUN".into(),
            })
            .await;
        match missing {
            Err(ClientError::Rpc(e)) => assert_eq!(e.data_code(), "run.not_found"),
            other => panic!("run.get of an unknown run: {other:?}"),
        }
    });
    daemon
        .stop()
        .expect("serve returns cleanly after daemon.stop");
    assert!(
        !DaemonPaths::for_home(&Home::at(dir.path())).socket.exists(),
        "a stopped daemon removes its socket"
    );
}

#[test]
fn a_subscription_delivers_every_event_of_a_run_in_order_to_its_end() {
    let dir = temp_home();
    let work = tempfile::tempdir().expect("work dir");
    let daemon = InProcessDaemon::start(Home::at(dir.path()));
    let (streamed, recorded) = block_on(async {
        let client = Client::connect(&daemon.home).await.expect("connect");
        let started: RunStarted = client
            .call(RunStart::new(
                WorkflowSource::Source(CHAIN.into()),
                work.path(),
            ))
            .await
            .expect("run.start");
        // After run.start: the backlog and the live events join without a
        // gap or a repeat, however far the run got meanwhile.
        let mut events = client
            .subscribe("s1", Some(started.run_id.clone()), 0)
            .await
            .expect("subscribe");
        let mut streamed: Vec<Event> = Vec::new();
        loop {
            let event = tokio::time::timeout(PATIENCE, events.next())
                .await
                .expect("the next event within the patience")
                .expect("the stream goes on until the run ends");
            let end = matches!(
                event.kind,
                EventKind::RunCompleted { .. }
                    | EventKind::RunFailed { .. }
                    | EventKind::RunCancelled { .. }
                    | EventKind::RunInterrupted { .. }
            );
            streamed.push(event);
            if end {
                break;
            }
        }
        client.unsubscribe("s1").await.expect("unsubscribe");
        assert!(
            events.next().await.is_none(),
            "an ended subscription's stream ends"
        );
        let recorded = client
            .call(RunEvents {
                run: started.run_id.clone(),
                after_seq: 0,
                limit: None,
            })
            .await
            .expect("run.events");
        (streamed, recorded.events)
    });
    let seqs: Vec<u64> = streamed.iter().map(|e| e.seq).collect();
    let want: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, want, "every event once, in order, from the first");
    assert_eq!(streamed[0].kind.name(), "run.started");
    assert_eq!(
        streamed.last().map(|e| e.kind.name()),
        Some("run.completed")
    );
    let completed: Vec<&str> = streamed
        .iter()
        .filter(|e| e.kind.name() == "stage.completed")
        .filter_map(|e| e.node_id.as_deref())
        .collect();
    assert_eq!(
        completed,
        ["start", "a", "b", "c", "exit"],
        "the stages, in order"
    );
    let as_json = |events: &[Event]| -> Vec<Value> {
        events
            .iter()
            .map(|e| serde_json::to_value(e).expect("an event is JSON"))
            .collect()
    };
    assert_eq!(
        as_json(&streamed),
        as_json(&recorded),
        "the stream is what the run recorded"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("side.log")).expect("side.log"),
        "a\nb\nc\n"
    );
    daemon.stop().expect("serve returns cleanly");
}

#[test]
fn malformed_frames_are_answered_and_the_connection_goes_on() {
    let dir = temp_home();
    let daemon = InProcessDaemon::start(Home::at(dir.path()));
    let mut line = RawLine::over(UnixStream::connect(&daemon.socket).expect("connect"));

    line.send(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"\n");
    let reply = line.recv();
    assert_eq!(reply["id"], Value::Null, "{reply}");
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    assert_eq!(reply["error"]["data"]["code"], "rpc.parse_error", "{reply}");

    line.send(b"\xff\xfe not UTF-8\n");
    let reply = line.recv();
    assert_eq!(reply["error"]["data"]["code"], "rpc.parse_error", "{reply}");

    line.send(b"[1, 2, 3]\n");
    let reply = line.recv();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(
        reply["error"]["data"]["code"], "rpc.invalid_request",
        "{reply}"
    );

    line.send(b"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"no.such.method\"}\n");
    let reply = line.recv();
    assert_eq!(reply["id"], 4, "{reply}");
    assert_eq!(
        reply["error"]["data"]["code"], "rpc.method_not_found",
        "{reply}"
    );

    // A line past the frame limit is discarded whole, not read as two.
    let mut long = vec![b'x'; MAX_FRAME_BYTES + 1];
    long.push(b'\n');
    line.send(&long);
    let reply = line.recv();
    assert_eq!(reply["error"]["data"]["code"], "rpc.too_long", "{reply}");

    // The same connection still serves a good request.
    line.send(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"daemon.status\"}\n");
    let reply = line.recv();
    assert_eq!(reply["id"], 6, "{reply}");
    assert_eq!(reply["result"]["pid"], json!(std::process::id()), "{reply}");
    daemon.stop().expect("serve returns cleanly");
}

// ----- the CLI through the daemon ------------------------------------------
//
// The CLI finds its daemon through WEFT_HOME, which a test cannot set in its
// own process (changing the environment of a running process is unsafe,
// and this workspace forbids `unsafe`). So each CLI test runs
// `cli_beside_the_daemon` below in a child process of this test binary
// with WEFT_HOME set: there the daemon is served and `weft` run in the same
// process, and the parent checks the exit code, the output and the store.

/// Names the CLI's arguments for the child (a JSON array of strings).
const ARGS_VAR: &str = "WEFT_IT_CLI_ARGS";

/// What the child prints before the CLI's exit code.
const EXIT_MARKER: &str = "weft exited with ";

#[test]
#[ignore = "the child half of the CLI tests in this module; they run it with WEFT_HOME set"]
fn cli_beside_the_daemon() {
    let args = std::env::var(ARGS_VAR)
        .unwrap_or_else(|_| panic!("run only by this module's CLI tests ({ARGS_VAR} is unset)"));
    let args: Vec<String> = serde_json::from_str(&args).expect("the CLI's arguments");
    // Never the user's home: the parent always sets it.
    let home = std::env::var_os("WEFT_HOME").expect("WEFT_HOME set by the parent test");
    let daemon = InProcessDaemon::start(Home::at(home));
    let code = weft::cli::main_from(args);
    daemon.stop().expect("serve returns cleanly");
    // `ExitCode` keeps its number to itself: find the one it was made of.
    let code = (0..=u8::MAX)
        .find(|&c| ExitCode::from(c) == code)
        .expect("the CLI exits with a u8");
    println!("\n{EXIT_MARKER}{code}");
}

/// What `weft ARGS` did in a child of this test binary serving a daemon on
/// `home`, run from `work`.
struct CliRun {
    code: u8,
    stdout: String,
    stderr: String,
}

fn weft_beside_the_daemon(home: &Path, work: &Path, args: &[&str]) -> CliRun {
    let child_test = module_path!()
        .split_once("::")
        .map_or("", |(_, module)| module)
        .to_owned()
        + "::cli_beside_the_daemon";
    let out = work.join("child.stdout");
    let err = work.join("child.stderr");
    let mut command = Command::new(std::env::current_exe().expect("this test binary"));
    command
        .args([child_test.as_str(), "--exact", "--ignored", "--nocapture"])
        .current_dir(work)
        // Only what the run needs: no keys to carry in (the CLI would
        // re-execute itself to hide them), nothing of the user's setup.
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("WEFT_HOME", home)
        .env("NO_COLOR", "1")
        .env(ARGS_VAR, serde_json::to_string(&args).expect("JSON"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"));
    for pass in ["RUST_BACKTRACE", "LLVM_PROFILE_FILE"] {
        if let Some(value) = std::env::var_os(pass) {
            command.env(pass, value);
        }
    }
    let mut child = command.spawn().expect("the child starts");
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child's status") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the child did not finish; its stderr:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        status.success(),
        "the child test failed ({status}):\n{stdout}\n{stderr}"
    );
    let code = stdout
        .lines()
        .find_map(|l| l.strip_prefix(EXIT_MARKER))
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or_else(|| panic!("no exit code in the child's output:\n{stdout}\n{stderr}"));
    CliRun {
        code,
        stdout,
        stderr,
    }
}

#[test]
fn weft_run_through_the_daemon_follows_the_run_to_its_conclusion() {
    let home = temp_home();
    let work = tempfile::tempdir().expect("work dir");
    std::fs::write(work.path().join("chain.fabro"), CHAIN).expect("workflow");
    let run = weft_beside_the_daemon(
        home.path(),
        work.path(),
        &["weft", "run", "chain.fabro", "--json"],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let conclusion: Value = run
        .stdout
        .lines()
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|v| v["run_id"].is_string())
        })
        .unwrap_or_else(|| panic!("no conclusion on stdout:\n{}", run.stdout));
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}");
    let stages: Vec<&str> = conclusion["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter_map(|s| s["node_id"].as_str())
        .collect();
    assert_eq!(stages, ["start", "a", "b", "c", "exit"], "{conclusion}");
    // The run happened in the daemon, which recorded it in this home.
    let id = conclusion["run_id"].as_str().expect("run id");
    let record = Store::open_read_only(&Home::at(home.path()))
        .and_then(|s| s.find_run(id))
        .expect("the run is recorded");
    assert_eq!(record.status, RunStatus::Succeeded);
    assert_eq!(
        std::fs::read_to_string(work.path().join("side.log")).expect("side.log"),
        "a\nb\nc\n",
        "each command ran once, in the caller's working directory"
    );
}

#[test]
fn weft_run_of_an_invalid_workflow_through_the_daemon_shows_where_and_exits_2() {
    let home = temp_home();
    let work = tempfile::tempdir().expect("work dir");
    std::fs::write(
        work.path().join("broken.fabro"),
        "digraph Broken {\n  start [shape=Mdiamond]\n  start -> nowhere\n}\n",
    )
    .expect("workflow");
    let run = weft_beside_the_daemon(home.path(), work.path(), &["weft", "run", "broken.fabro"]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("broken.fabro:"),
        "a diagnostic with its place: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the workflow is invalid"),
        "{}",
        run.stderr
    );
    let runs = Store::open_read_only(&Home::at(home.path()))
        .and_then(|s| s.list_runs(&weft::store::RunFilter::default()))
        .map(|r| r.len())
        .unwrap_or(0);
    assert_eq!(runs, 0, "no run is recorded");
}
