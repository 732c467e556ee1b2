//! Drives the built `weft-acp-agent` over pipes, with the test as a tiny ACP client.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Long enough for a slow machine, short enough that a broken agent fails the test.
const PATIENCE: Duration = Duration::from_secs(10);

/// A fresh directory under the target dir, unique per call.
fn scratch_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("acpagent-{name}-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create scratch dir")
}

/// What the agent asked the client for during a turn, and everything it streamed.
#[derive(Default)]
struct TurnRecord {
    updates: Vec<Value>,
    requests: Vec<Value>,
    stop_reason: String,
}

impl TurnRecord {
    fn said(&self) -> Vec<String> {
        self.texts("agent_message_chunk")
    }

    fn texts(&self, kind: &str) -> Vec<String> {
        self.updates
            .iter()
            .filter(|update| update["sessionUpdate"] == kind)
            .map(|update| update["content"]["text"].as_str().expect("text").to_owned())
            .collect()
    }

    fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.updates
            .iter()
            .filter(|update| update["sessionUpdate"] == kind)
            .collect()
    }
}

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
    work_dir: tempfile::TempDir,
    transcript: PathBuf,
}

impl Client {
    fn start(name: &str, script: Value) -> Self {
        let work_dir = scratch_dir(name);
        let script_path = work_dir.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).expect("write script");
        let transcript = work_dir.path().join("transcript.jsonl");
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft-acp-agent"))
            .env("WEFT_ACP_SCRIPT", &script_path)
            .env("WEFT_ACP_LOG", &transcript)
            .current_dir(&work_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn weft-acp-agent");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 0,
            work_dir,
            transcript,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write to agent");
        stdin.flush().expect("flush to agent");
    }

    fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn answer(&mut self, request: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    fn answer_error(&mut self, request: &Value, code: i64, message: &str) {
        self.send(&json!({
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": code, "message": message},
        }));
    }

    fn next_line(&self) -> String {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("the agent wrote nothing in time")
    }

    fn next_message(&self) -> Value {
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON from the agent: {line}"))
    }

    /// The response to our request `id`; nothing else may come first.
    fn response(&self, id: i64) -> Value {
        let message = self.next_message();
        assert_eq!(
            message["id"], id,
            "expected the response to {id}, got {message}"
        );
        message
    }

    fn initialize(&mut self, capabilities: Value) -> Value {
        let id = self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities,
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        self.response(id)["result"].clone()
    }

    fn open_session(&mut self, capabilities: Value) -> String {
        self.initialize(capabilities);
        let cwd = self.work_dir.path().to_string_lossy().into_owned();
        let id = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        self.response(id)["result"]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned()
    }

    fn prompt(&mut self, session: &str) -> i64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        )
    }

    /// Runs one turn, answering the agent's requests with `serve` (Ok = result,
    /// Err = error message), and `on_update` seeing each update as it arrives.
    fn turn(
        &mut self,
        session: &str,
        mut serve: impl FnMut(&Value) -> Result<Value, String>,
        mut on_update: impl FnMut(&mut Self, &Value),
    ) -> TurnRecord {
        let prompt_id = self.prompt(session);
        let mut record = TurnRecord::default();
        loop {
            let message = self.next_message();
            match (message.get("method"), message.get("id")) {
                (Some(_), Some(_)) => {
                    assert!(
                        message["id"].is_string(),
                        "agent ids are strings: {message}"
                    );
                    record.requests.push(message.clone());
                    match serve(&message) {
                        Ok(result) => self.answer(&message, result),
                        Err(error) => self.answer_error(&message, -32002, &error),
                    }
                }
                (Some(method), None) => {
                    assert_eq!(method, "session/update", "{message}");
                    assert_eq!(message["params"]["sessionId"], session);
                    let update = message["params"]["update"].clone();
                    on_update(self, &update);
                    record.updates.push(update);
                }
                (None, _) => {
                    assert_eq!(message["id"], prompt_id, "unexpected response {message}");
                    record.stop_reason = message["result"]["stopReason"]
                        .as_str()
                        .expect("stopReason")
                        .to_owned();
                    return record;
                }
            }
        }
    }

    fn simple_turn(&mut self, session: &str) -> TurnRecord {
        self.turn(
            session,
            |request| panic!("unexpected request {request}"),
            |_, _| {},
        )
    }

    fn close_stdin(&mut self) {
        self.stdin.take();
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the agent did not exit in time");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every line the agent wrote until it closed stdout.
    fn rest_of_output(&self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            lines.push(line);
        }
        lines
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn all_capabilities() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true})
}

#[test]
fn initialize_advertises_protocol_one_and_the_agent_name() {
    let mut client = Client::start("initialize", json!({"prompts": []}));
    let result = client.initialize(all_capabilities());
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["agentCapabilities"]["loadSession"], false);
    assert_eq!(result["authMethods"], json!([]));
    assert_eq!(result["agentInfo"]["name"], "weft-acp-agent");
}

#[test]
fn a_turn_streams_say_think_plan_and_usage_then_ends() {
    let mut client = Client::start(
        "stream",
        json!({"prompts": [[
            {"think": "pondering"},
            {"plan": ["step one", "step two"]},
            {"say": "hello"},
            {"usage": {"used": 1000, "size": 200000, "cost": 0.05}},
        ]]}),
    );
    let session = client.open_session(all_capabilities());
    assert_eq!(session, "sess-1");
    let turn = client.simple_turn(&session);
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.texts("agent_thought_chunk"), ["pondering"]);
    assert_eq!(turn.said(), ["hello"]);
    assert_eq!(
        turn.of_kind("plan")[0]["entries"],
        json!([
            {"content": "step one", "priority": "medium", "status": "pending"},
            {"content": "step two", "priority": "medium", "status": "pending"},
        ])
    );
    let usage = turn.of_kind("usage_update")[0];
    assert_eq!(usage["used"], 1000);
    assert_eq!(usage["size"], 200000);
    assert_eq!(usage["cost"], json!({"amount": 0.05, "currency": "USD"}));
}

#[test]
fn prompts_take_script_entries_in_order_then_say_nothing_more_scripted() {
    let mut client = Client::start(
        "order",
        json!({"prompts": [[{"say": "first"}], [{"say": "second"}, {"stop": "max_tokens"}, {"say": "never"}]]}),
    );
    let session = client.open_session(all_capabilities());
    assert_eq!(client.simple_turn(&session).said(), ["first"]);
    let second = client.simple_turn(&session);
    assert_eq!(second.said(), ["second"]);
    assert_eq!(second.stop_reason, "max_tokens");
    assert_eq!(
        client.simple_turn(&session).said(),
        ["nothing more scripted"]
    );
}

#[test]
fn without_a_script_the_agent_says_hello() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft-acp-agent"))
        .env_remove("WEFT_ACP_SCRIPT")
        .env_remove("WEFT_ACP_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let cwd = std::env::temp_dir();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
               "params": {"sessionId": "sess-1", "prompt": []}}),
    ] {
        writeln!(stdin, "{message}").expect("write");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    assert!(output.status.success());
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(lines[2]["params"]["update"]["content"]["text"], "hello");
    assert_eq!(lines[3]["result"]["stopReason"], "end_turn");
}

#[test]
fn write_asks_the_client_with_the_absolute_path_and_completes_on_its_ack() {
    let outside_dir = scratch_dir("outside");
    let outside = outside_dir.path().join("escape.txt");
    let mut client = Client::start(
        "write",
        json!({"prompts": [[
            {"write": {"path": "src/a.txt", "content": "A"}},
            {"write": {"path": outside, "content": "B"}},
        ]]}),
    );
    let session = client.open_session(all_capabilities());
    let work_dir = client.work_dir.path().to_path_buf();
    let turn = client.turn(
        &session,
        |request| {
            assert_eq!(request["method"], "fs/write_text_file");
            if request["params"]["path"] == json!(work_dir.join("src/a.txt")) {
                assert_eq!(request["params"]["content"], "A");
                assert_eq!(request["params"]["sessionId"], "sess-1");
                Ok(json!({}))
            } else {
                Err("outside the work dir".to_owned())
            }
        },
        |_, _| {},
    );
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.requests.len(), 2);
    assert_eq!(turn.requests[1]["params"]["path"], json!(outside));
    let calls = turn.of_kind("tool_call");
    assert_eq!(calls[0]["kind"], "edit");
    assert_eq!(calls[0]["title"], "Write src/a.txt");
    assert_eq!(calls[0]["status"], "pending");
    assert_eq!(
        calls[0]["locations"],
        json!([{"path": work_dir.join("src/a.txt")}])
    );
    let finished = turn.of_kind("tool_call_update");
    assert_eq!(finished[0]["toolCallId"], calls[0]["toolCallId"]);
    assert_eq!(finished[0]["status"], "completed");
    assert_eq!(finished[1]["status"], "failed");
    assert_eq!(
        finished[1]["content"][0]["content"]["text"],
        "outside the work dir"
    );
}

#[test]
fn read_says_what_the_client_returned_or_its_error() {
    let mut client = Client::start(
        "read",
        json!({"prompts": [[{"read": {"path": "a.txt"}}, {"read": {"path": "missing.txt"}}]]}),
    );
    let session = client.open_session(all_capabilities());
    let a = client.work_dir.path().join("a.txt");
    let turn = client.turn(
        &session,
        |request| {
            assert_eq!(request["method"], "fs/read_text_file");
            if request["params"]["path"] == json!(a) {
                Ok(json!({"content": "alpha"}))
            } else {
                Err("no such file".to_owned())
            }
        },
        |_, _| {},
    );
    assert_eq!(
        turn.said(),
        ["read a.txt: alpha", "read missing.txt failed: no such file"]
    );
    assert_eq!(turn.of_kind("tool_call")[0]["kind"], "read");
}

#[test]
fn steps_needing_a_capability_the_client_lacks_say_unsupported() {
    let mut client = Client::start(
        "unsupported",
        json!({"prompts": [[
            {"write": {"path": "a.txt", "content": "A"}},
            {"read": {"path": "a.txt"}},
            {"terminal": {"command": "true"}},
        ]]}),
    );
    let session = client.open_session(json!({}));
    let turn = client.simple_turn(&session);
    assert_eq!(
        turn.said(),
        [
            "write unsupported by the client",
            "read unsupported by the client",
            "terminal unsupported by the client"
        ]
    );
}

#[test]
fn disk_write_puts_the_file_under_the_work_dir_without_a_message() {
    let mut client = Client::start(
        "disk",
        json!({"prompts": [[{"disk_write": {"path": "deep/b.txt", "content": "B"}}]]}),
    );
    let session = client.open_session(all_capabilities());
    let turn = client.simple_turn(&session);
    assert!(turn.updates.is_empty());
    let written = std::fs::read_to_string(client.work_dir.path().join("deep/b.txt")).expect("read");
    assert_eq!(written, "B");
}

fn permission_turn(name: &str, outcome: Value) -> TurnRecord {
    let mut client = Client::start(
        name,
        json!({"prompts": [[{"permission": {"title": "Run rm -rf build", "kind": "execute"}}]]}),
    );
    let session = client.open_session(all_capabilities());
    client.turn(
        &session,
        |request| {
            assert_eq!(request["method"], "session/request_permission");
            assert_eq!(request["params"]["toolCall"]["title"], "Run rm -rf build");
            let options: Vec<&str> = request["params"]["options"]
                .as_array()
                .expect("options")
                .iter()
                .map(|option| option["optionId"].as_str().expect("optionId"))
                .collect();
            assert_eq!(options, ["allow", "allow_always", "reject"]);
            Ok(json!({"outcome": outcome}))
        },
        |_, _| {},
    )
}

#[test]
fn permission_allowed_completes_the_tool_call() {
    let turn = permission_turn("allow", json!({"outcome": "selected", "optionId": "allow"}));
    assert_eq!(turn.said(), ["permission: allow"]);
    assert_eq!(turn.of_kind("tool_call")[0]["kind"], "execute");
    assert_eq!(turn.of_kind("tool_call_update")[0]["status"], "completed");
}

#[test]
fn permission_rejected_fails_the_tool_call() {
    let turn = permission_turn(
        "reject",
        json!({"outcome": "selected", "optionId": "reject"}),
    );
    assert_eq!(turn.said(), ["permission: reject"]);
    assert_eq!(turn.of_kind("tool_call_update")[0]["status"], "failed");
}

#[test]
fn permission_cancelled_is_said() {
    let turn = permission_turn("perm-cancel", json!({"outcome": "cancelled"}));
    assert_eq!(turn.said(), ["permission: cancelled"]);
}

#[test]
fn terminal_runs_create_wait_output_release_in_the_session_cwd() {
    let mut client = Client::start(
        "terminal",
        json!({"prompts": [[{"terminal": {"command": "sh", "args": ["-c", "echo hi"], "output_byte_limit": 1000}}]]}),
    );
    let session = client.open_session(all_capabilities());
    let work_dir = client.work_dir.path().to_path_buf();
    let turn = client.turn(
        &session,
        |request| match request["method"].as_str().expect("method") {
            "terminal/create" => {
                assert_eq!(request["params"]["command"], "sh");
                assert_eq!(request["params"]["args"], json!(["-c", "echo hi"]));
                assert_eq!(request["params"]["cwd"], json!(work_dir));
                assert_eq!(request["params"]["outputByteLimit"], 1000);
                Ok(json!({"terminalId": "term-1"}))
            }
            "terminal/wait_for_exit" => Ok(json!({"exitCode": 0, "signal": null})),
            "terminal/output" => Ok(json!({"output": "hi\n", "truncated": true})),
            "terminal/release" => Ok(json!({})),
            other => panic!("unexpected {other}"),
        },
        |_, _| {},
    );
    let methods: Vec<&str> = turn
        .requests
        .iter()
        .map(|request| request["method"].as_str().expect("method"))
        .collect();
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    assert!(
        turn.requests[1..]
            .iter()
            .all(|request| request["params"]["terminalId"] == "term-1")
    );
    assert_eq!(turn.said(), ["terminal exit 0: hi\n (truncated)"]);
    assert_eq!(turn.of_kind("tool_call")[0]["kind"], "execute");
}

#[test]
fn terminal_kill_kills_then_reports_the_exit_status() {
    let mut client = Client::start(
        "terminal-kill",
        json!({"prompts": [[{"terminal_kill": {"command": "sh", "args": ["-c", "sleep 100"], "after_ms": 10}}]]}),
    );
    let session = client.open_session(all_capabilities());
    let turn = client.turn(
        &session,
        |request| match request["method"].as_str().expect("method") {
            "terminal/create" => Ok(json!({"terminalId": "term-1"})),
            "terminal/wait_for_exit" => Ok(json!({"exitCode": null, "signal": "SIGKILL"})),
            "terminal/kill" | "terminal/release" => Ok(json!({})),
            other => panic!("unexpected {other}"),
        },
        |_, _| {},
    );
    let methods: Vec<&str> = turn
        .requests
        .iter()
        .map(|request| request["method"].as_str().expect("method"))
        .collect();
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/kill",
            "terminal/wait_for_exit",
            "terminal/release"
        ]
    );
    assert_eq!(
        turn.said(),
        [r#"killed: {"exitCode":null,"signal":"SIGKILL"}"#]
    );
}

#[test]
fn cancel_during_a_sleep_ends_the_turn_as_cancelled_at_once() {
    let mut client = Client::start(
        "cancel",
        json!({"prompts": [[{"say": "sleeping"}, {"sleep_ms": 60000}, {"say": "woke"}]]}),
    );
    let session = client.open_session(all_capabilities());
    let started = Instant::now();
    let turn = client.turn(
        &session,
        |request| panic!("unexpected request {request}"),
        |client, update| {
            if update["content"]["text"] == "sleeping" {
                client.notify("session/cancel", json!({"sessionId": "sess-1"}));
            }
        },
    );
    assert_eq!(turn.stop_reason, "cancelled");
    assert_eq!(turn.said(), ["sleeping"]);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn cancel_while_waiting_for_permission_ends_the_turn() {
    let mut client = Client::start(
        "cancel-permission",
        json!({"prompts": [[{"permission": {"title": "Run it"}}, {"say": "never"}]]}),
    );
    let session = client.open_session(all_capabilities());
    let prompt_id = client.prompt(&session);
    let request = loop {
        let message = client.next_message();
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    client.notify("session/cancel", json!({"sessionId": session}));
    let message = loop {
        let message = client.next_message();
        if message.get("method").is_none() {
            break message;
        }
    };
    assert_eq!(message["id"], prompt_id);
    assert_eq!(message["result"]["stopReason"], "cancelled");
    // A late answer to the abandoned request is ignored.
    client.answer(&request, json!({"outcome": {"outcome": "cancelled"}}));
    assert_eq!(
        client.simple_turn(&session).said(),
        ["nothing more scripted"]
    );
}

#[test]
fn ignore_cancel_keeps_the_turn_going() {
    let mut client = Client::start(
        "ignore-cancel",
        json!({"prompts": [[{"ignore_cancel": true}, {"say": "sleeping"}, {"sleep_ms": 200}, {"say": "woke"}]]}),
    );
    let session = client.open_session(all_capabilities());
    let turn = client.turn(
        &session,
        |request| panic!("unexpected request {request}"),
        |client, update| {
            if update["content"]["text"] == "sleeping" {
                client.notify("session/cancel", json!({"sessionId": "sess-1"}));
            }
        },
    );
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.said(), ["sleeping", "woke"]);
}

#[test]
fn crash_exits_with_the_scripted_code_without_answering() {
    let mut client = Client::start(
        "crash",
        json!({"prompts": [[{"say": "about to crash"}, {"crash": 3}]]}),
    );
    let session = client.open_session(all_capabilities());
    client.prompt(&session);
    let rest = client.rest_of_output();
    assert_eq!(rest.len(), 1, "only the chunk, no response: {rest:?}");
    assert_eq!(client.wait_exit().code(), Some(3));
}

#[test]
fn garbage_flood_unknown_update_and_ext_request_reach_the_client() {
    let mut client = Client::start(
        "faults",
        json!({"prompts": [[
            {"garbage": "not json at all"},
            {"flood": 50},
            {"unknown_update": true},
            {"ext_request": true},
            {"ext_request": true},
        ]]}),
    );
    let session = client.open_session(all_capabilities());
    let prompt_id = client.prompt(&session);
    assert_eq!(client.next_line(), "not json at all");
    for _ in 0..50 {
        assert_eq!(
            client.next_message()["params"]["update"]["content"]["text"],
            "x"
        );
    }
    assert_eq!(
        client.next_message()["params"]["update"]["sessionUpdate"],
        "some_future_kind"
    );
    let ext = client.next_message();
    assert_eq!(ext["method"], "_weft/test");
    client.answer_error(&ext, -32601, "method not found");
    let said = client.next_message();
    assert_eq!(said["params"]["update"]["content"]["text"], "ext: -32601");
    let ext = client.next_message();
    client.answer(&ext, json!({"ok": true}));
    let said = client.next_message();
    assert_eq!(
        said["params"]["update"]["content"]["text"],
        r#"ext: {"ok":true}"#
    );
    assert_eq!(
        client.response(prompt_id)["result"]["stopReason"],
        "end_turn"
    );
}

#[test]
fn start_exit_leaves_with_the_code_before_reading() {
    let mut client = Client::start("start-exit", json!({"start": "exit:7"}));
    assert_eq!(client.wait_exit().code(), Some(7));
}

#[test]
fn start_garbage_prints_a_non_json_line_then_serves() {
    let mut client = Client::start("start-garbage", json!({"start": "garbage"}));
    let line = client.next_line();
    assert!(serde_json::from_str::<Value>(&line).is_err(), "{line}");
    assert_eq!(client.initialize(all_capabilities())["protocolVersion"], 1);
}

#[test]
fn start_version_answers_initialize_with_that_version() {
    let mut client = Client::start("start-version", json!({"start": "version:2"}));
    assert_eq!(client.initialize(all_capabilities())["protocolVersion"], 2);
}

#[test]
fn start_silent_reads_and_logs_but_never_answers() {
    let mut client = Client::start("start-silent", json!({"start": "silent"}));
    client.request("initialize", json!({"protocolVersion": 1}));
    client.close_stdin();
    assert!(client.wait_exit().success());
    assert!(client.rest_of_output().is_empty());
    let transcript = std::fs::read_to_string(&client.transcript).expect("transcript");
    let logged: Value = serde_json::from_str(transcript.trim()).expect("json line");
    assert_eq!(logged["method"], "initialize");
}

#[test]
fn unknown_methods_get_method_not_found_and_eof_exits_cleanly() {
    let mut client = Client::start("unknown", json!({"prompts": []}));
    let id = client.request("session/load", json!({}));
    assert_eq!(client.response(id)["error"]["code"], -32601);
    client.notify("_weft/whatever", json!({}));
    let id = client.request("session/prompt", json!({"sessionId": "nope", "prompt": []}));
    assert_eq!(client.response(id)["error"]["code"], -32002);
    client.close_stdin();
    assert!(client.wait_exit().success());
}

#[test]
fn the_transcript_logs_every_client_message_in_order() {
    let mut client = Client::start("transcript", json!({"prompts": [[{"say": "hi"}]]}));
    let session = client.open_session(all_capabilities());
    client.simple_turn(&session);
    client.close_stdin();
    client.wait_exit();
    let methods: Vec<String> = std::fs::read_to_string(&client.transcript)
        .expect("transcript")
        .lines()
        .map(|line| {
            let message: Value = serde_json::from_str(line).expect("json line");
            message["method"].as_str().expect("method").to_owned()
        })
        .collect();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
}
