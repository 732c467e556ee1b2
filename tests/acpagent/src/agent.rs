//! The agent side of ACP v1: answers the client's requests and plays the
//! script's steps on each `session/prompt`.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::script::{FileContent, Permission, Step, Terminal, TerminalKill, Usage};

/// Why a step could not go on: the turn ends with a stop reason, or the client
/// answered one of our requests with an error (the step reports it and the turn goes on).
enum Failure {
    Stop(String),
    Client { code: i64, message: String },
}

type Flow<T> = Result<T, Failure>;

const CANCELLED: &str = "cancelled";

/// What the client said it can serve in `initialize`; anything missing is unsupported.
#[derive(Debug, Default)]
struct ClientCapabilities {
    read_text_file: bool,
    write_text_file: bool,
    terminal: bool,
}

/// The prompt being answered.
struct Turn {
    session_id: String,
    cwd: PathBuf,
    cancelled: bool,
}

pub struct Agent {
    prompts: Vec<Vec<Step>>,
    protocol_version: i64,
    inbox: Receiver<String>,
    /// Prompts that arrived while another turn was running, served after it.
    deferred: VecDeque<Value>,
    capabilities: ClientCapabilities,
    sessions: HashMap<String, PathBuf>,
    sessions_made: u32,
    prompts_run: usize,
    requests_sent: u64,
    tool_calls_made: u64,
    ignore_cancel: bool,
    turn: Option<Turn>,
    /// Models offered (the first is current at start); none when empty.
    models: Vec<String>,
    current_model: Option<String>,
}

impl Agent {
    pub fn new(prompts: Vec<Vec<Step>>, protocol_version: i64, inbox: Receiver<String>) -> Self {
        Self {
            prompts,
            protocol_version,
            inbox,
            deferred: VecDeque::new(),
            capabilities: ClientCapabilities::default(),
            sessions: HashMap::new(),
            sessions_made: 0,
            prompts_run: 0,
            requests_sent: 0,
            tool_calls_made: 0,
            ignore_cancel: false,
            turn: None,
            models: Vec::new(),
            current_model: None,
        }
    }

    /// Offers `models` as the session's model option.
    #[must_use]
    pub fn offering_models(mut self, models: Vec<String>) -> Self {
        self.current_model = models.first().cloned();
        self.models = models;
        self
    }

    /// The `configOptions` of `session/new`'s answer: the model option, when
    /// models are offered.
    fn config_options(&self) -> Value {
        if self.models.is_empty() {
            return json!([]);
        }
        let options: Vec<Value> = self
            .models
            .iter()
            .map(|m| json!({"value": m, "name": m}))
            .collect();
        json!([{
            "id": "model", "name": "Model", "category": "model", "type": "select",
            "currentValue": self.current_model, "options": options
        }])
    }

    /// Serves until stdin closes, then exits the process with code 0.
    pub fn serve(mut self) -> ! {
        loop {
            let message = match self.deferred.pop_front() {
                Some(message) => message,
                None => match self.inbox.recv() {
                    Ok(line) => match parse(&line) {
                        Some(message) => message,
                        None => continue,
                    },
                    Err(_) => end_of_input(),
                },
            };
            self.handle(message);
        }
    }

    /// Handles one message that is not the awaited answer to one of our requests.
    fn handle(&mut self, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            (Some(method), Some(id)) => self.handle_request(&method, id, params, message),
            (Some(method), None) => self.handle_notification(&method, &params),
            (None, Some(id)) => log(&format!("ignoring a response to no pending request: {id}")),
            (None, None) => log(&format!(
                "ignoring a message that is neither request nor response: {message}"
            )),
        }
    }

    fn handle_request(&mut self, method: &str, id: Value, params: Value, message: Value) {
        match method {
            "initialize" => {
                let capabilities = &params["clientCapabilities"];
                self.capabilities = ClientCapabilities {
                    read_text_file: capabilities["fs"]["readTextFile"] == true,
                    write_text_file: capabilities["fs"]["writeTextFile"] == true,
                    terminal: capabilities["terminal"] == true,
                };
                respond(
                    &id,
                    json!({
                        "protocolVersion": self.protocol_version,
                        "agentCapabilities": {"loadSession": false, "promptCapabilities": {}},
                        "authMethods": [],
                        "agentInfo": {"name": "weft-acp-agent", "version": env!("CARGO_PKG_VERSION")},
                    }),
                );
            }
            "session/new" => {
                let Some(cwd) = params["cwd"]
                    .as_str()
                    .filter(|cwd| Path::new(cwd).is_absolute())
                else {
                    respond_error(&id, -32602, "session/new needs an absolute cwd");
                    return;
                };
                self.sessions_made += 1;
                let session_id = format!("sess-{}", self.sessions_made);
                self.sessions.insert(session_id.clone(), PathBuf::from(cwd));
                respond(
                    &id,
                    json!({"sessionId": session_id, "configOptions": self.config_options()}),
                );
            }
            "session/set_config_option" => {
                let value = params["value"].as_str().unwrap_or_default().to_owned();
                if params["configId"] != "model" || !self.models.contains(&value) {
                    respond_error(&id, -32602, &format!("no such option value {value:?}"));
                    return;
                }
                self.current_model = Some(value);
                respond(&id, json!({"configOptions": self.config_options()}));
            }
            // One turn at a time: a prompt that arrives mid-turn waits for the turn to end.
            "session/prompt" if self.turn.is_some() => self.deferred.push_back(message),
            "session/prompt" => self.run_prompt(&id, &params),
            _ => respond_error(&id, -32601, &format!("method not found: {method}")),
        }
    }

    fn handle_notification(&mut self, method: &str, params: &Value) {
        if method != "session/cancel" || self.ignore_cancel {
            return;
        }
        if let Some(turn) = self.turn.as_mut()
            && params["sessionId"].as_str() == Some(turn.session_id.as_str())
        {
            turn.cancelled = true;
        }
    }

    fn run_prompt(&mut self, id: &Value, params: &Value) {
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let Some(cwd) = self.sessions.get(&session_id).cloned() else {
            respond_error(id, -32002, &format!("unknown session {session_id:?}"));
            return;
        };
        let steps = self
            .prompts
            .get(self.prompts_run)
            .cloned()
            .unwrap_or_else(|| vec![Step::Say("nothing more scripted".to_owned())]);
        self.prompts_run += 1;
        self.turn = Some(Turn {
            session_id,
            cwd,
            cancelled: false,
        });
        let stop_reason = match self.run_steps(steps) {
            Ok(()) => "end_turn".to_owned(),
            Err(reason) => reason,
        };
        self.turn = None;
        respond(id, json!({"stopReason": stop_reason}));
    }

    fn run_steps(&mut self, steps: Vec<Step>) -> Result<(), String> {
        for step in steps {
            self.take_pending_messages()?;
            match self.run_step(step) {
                Ok(()) => {}
                Err(Failure::Stop(reason)) => return Err(reason),
                // Steps that talk to the client report its errors themselves.
                Err(Failure::Client { message, .. }) => log(&format!("client error: {message}")),
            }
        }
        self.take_pending_messages()
    }

    fn run_step(&mut self, step: Step) -> Flow<()> {
        match step {
            Step::Say(text) => self.chunk("agent_message_chunk", &text),
            Step::Think(text) => self.chunk("agent_thought_chunk", &text),
            Step::Plan(entries) => {
                let entries: Vec<Value> = entries
                    .iter()
                    .map(|entry| json!({"content": entry, "priority": "medium", "status": "pending"}))
                    .collect();
                self.update(json!({"sessionUpdate": "plan", "entries": entries}));
            }
            Step::Write(file) => self.write(&file)?,
            Step::Read(file) => self.read(&file.path)?,
            Step::DiskWrite(file) => self.disk_write(&file),
            Step::Permission(permission) => self.permission(&permission)?,
            Step::Terminal(terminal) => self.terminal(&terminal)?,
            Step::TerminalKill(terminal) => self.terminal_kill(&terminal)?,
            Step::SleepMs(millis) => self.wait(Duration::from_millis(millis))?,
            Step::IgnoreCancel(ignore) => self.ignore_cancel = ignore,
            Step::Crash(code) => {
                log(&format!("crashing with exit code {code} as scripted"));
                std::process::exit(code);
            }
            Step::Garbage(text) => write_line(&text),
            Step::Flood(count) => {
                for _ in 0..count {
                    self.chunk("agent_message_chunk", "x");
                }
            }
            // `false` on these switches makes the step a no-op.
            Step::Hang(false) | Step::UnknownUpdate(false) | Step::ExtRequest(false) => {}
            Step::Hang(true) => {
                log("hanging as scripted");
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            Step::Usage(usage) => self.usage(&usage),
            Step::Stop(reason) => return Err(Failure::Stop(reason)),
            Step::UnknownUpdate(true) => self.update(json!({
                "sessionUpdate": "some_future_kind",
                "detail": "a kind no client knows yet",
            })),
            Step::ExtRequest(true) => {
                let said = match self.call("_weft/test", json!({})) {
                    Ok(result) => format!("ext: {result}"),
                    Err(Failure::Client { code, .. }) => format!("ext: {code}"),
                    Err(stop) => return Err(stop),
                };
                self.chunk("agent_message_chunk", &said);
            }
        }
        Ok(())
    }

    fn write(&mut self, file: &FileContent) -> Flow<()> {
        if !self.capabilities.write_text_file {
            self.chunk("agent_message_chunk", "write unsupported by the client");
            return Ok(());
        }
        let path = self.absolute(&file.path);
        let call_id = self.tool_call(
            &format!("Write {}", file.path),
            "edit",
            json!({"path": path, "content": file.content}),
            Some(&path),
        );
        let params = json!({"sessionId": self.session_id(), "path": path, "content": file.content});
        match self.call("fs/write_text_file", params) {
            Ok(_) => self.finish_tool_call(&call_id, true, None),
            Err(Failure::Client { message, .. }) => {
                self.finish_tool_call(&call_id, false, Some(&message));
                self.chunk(
                    "agent_message_chunk",
                    &format!("write {} failed: {message}", file.path),
                );
            }
            Err(stop) => return Err(stop),
        }
        Ok(())
    }

    fn read(&mut self, relative: &str) -> Flow<()> {
        if !self.capabilities.read_text_file {
            self.chunk("agent_message_chunk", "read unsupported by the client");
            return Ok(());
        }
        let path = self.absolute(relative);
        let call_id = self.tool_call(
            &format!("Read {relative}"),
            "read",
            json!({"path": path}),
            Some(&path),
        );
        let params = json!({"sessionId": self.session_id(), "path": path});
        let said = match self.call("fs/read_text_file", params) {
            Ok(result) => {
                self.finish_tool_call(&call_id, true, None);
                let content = result["content"].as_str().unwrap_or_default();
                format!("read {relative}: {content}")
            }
            Err(Failure::Client { message, .. }) => {
                self.finish_tool_call(&call_id, false, Some(&message));
                format!("read {relative} failed: {message}")
            }
            Err(stop) => return Err(stop),
        };
        self.chunk("agent_message_chunk", &said);
        Ok(())
    }

    fn disk_write(&mut self, file: &FileContent) {
        let path = PathBuf::from(self.absolute(&file.path));
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, &file.content));
        if let Err(error) = written {
            self.chunk(
                "agent_message_chunk",
                &format!("disk_write {} failed: {error}", file.path),
            );
        }
    }

    fn permission(&mut self, permission: &Permission) -> Flow<()> {
        let call_id = self.tool_call(&permission.title, &permission.kind, Value::Null, None);
        let mut params = json!({
            "sessionId": self.session_id(),
            "toolCall": {
                "toolCallId": call_id,
                "title": permission.title,
                "kind": permission.kind,
                "status": "pending",
                "locations": permission
                    .path
                    .iter()
                    .map(|path| json!({"path": self.absolute(path)}))
                    .collect::<Vec<_>>(),
            },
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        });
        if let Some(input) = &permission.input {
            params["toolCall"]["rawInput"] = input.clone();
        }
        let (said, allowed) = match self.call("session/request_permission", params) {
            Ok(result) => {
                let outcome = &result["outcome"];
                match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
                    (Some("selected"), Some(option)) => {
                        (format!("permission: {option}"), option.starts_with("allow"))
                    }
                    (Some("cancelled"), _) => ("permission: cancelled".to_owned(), false),
                    _ => (format!("permission: unreadable outcome {outcome}"), false),
                }
            }
            Err(Failure::Client { message, .. }) => {
                (format!("permission failed: {message}"), false)
            }
            Err(stop) => return Err(stop),
        };
        self.chunk("agent_message_chunk", &said);
        self.finish_tool_call(&call_id, allowed, None);
        Ok(())
    }

    fn terminal(&mut self, terminal: &Terminal) -> Flow<()> {
        if !self.capabilities.terminal {
            self.chunk("agent_message_chunk", "terminal unsupported by the client");
            return Ok(());
        }
        let call_id = self.command_tool_call(&terminal.command, &terminal.args);
        let mut params = json!({
            "sessionId": self.session_id(),
            "command": terminal.command,
            "args": terminal.args,
            "cwd": self.cwd(),
        });
        if let Some(limit) = terminal.output_byte_limit {
            params["outputByteLimit"] = json!(limit);
        }
        let outcome = self.run_terminal(&call_id, params);
        match outcome {
            Ok((exit, output)) => {
                let status = match (exit["exitCode"].as_i64(), exit["signal"].as_str()) {
                    (Some(code), _) => code.to_string(),
                    (None, Some(signal)) => signal.to_owned(),
                    (None, None) => "unknown".to_owned(),
                };
                let text = output["output"].as_str().unwrap_or_default();
                let truncated = if output["truncated"] == true {
                    " (truncated)"
                } else {
                    ""
                };
                self.chunk(
                    "agent_message_chunk",
                    &format!("terminal exit {status}: {text}{truncated}"),
                );
                self.finish_tool_call(&call_id, exit["exitCode"] == 0, None);
            }
            Err(Failure::Client { message, .. }) => {
                self.finish_tool_call(&call_id, false, Some(&message));
                self.chunk(
                    "agent_message_chunk",
                    &format!("terminal failed: {message}"),
                );
            }
            Err(stop) => return Err(stop),
        }
        Ok(())
    }

    /// create, wait_for_exit, output, release; gives the exit status and the output.
    fn run_terminal(&mut self, call_id: &str, create: Value) -> Flow<(Value, Value)> {
        let terminal_id = self.create_terminal(call_id, create)?;
        let handle = json!({"sessionId": self.session_id(), "terminalId": terminal_id});
        let exit = self.call("terminal/wait_for_exit", handle.clone())?;
        let output = self.call("terminal/output", handle.clone())?;
        self.call("terminal/release", handle)?;
        Ok((exit, output))
    }

    fn terminal_kill(&mut self, terminal: &TerminalKill) -> Flow<()> {
        if !self.capabilities.terminal {
            self.chunk(
                "agent_message_chunk",
                "terminal_kill unsupported by the client",
            );
            return Ok(());
        }
        let call_id = self.command_tool_call(&terminal.command, &terminal.args);
        let create = json!({
            "sessionId": self.session_id(),
            "command": terminal.command,
            "args": terminal.args,
            "cwd": self.cwd(),
        });
        let outcome =
            self.kill_terminal(&call_id, create, Duration::from_millis(terminal.after_ms));
        match outcome {
            Ok(exit) => {
                self.chunk("agent_message_chunk", &format!("killed: {exit}"));
                self.finish_tool_call(&call_id, false, None);
            }
            Err(Failure::Client { message, .. }) => {
                self.finish_tool_call(&call_id, false, Some(&message));
                self.chunk(
                    "agent_message_chunk",
                    &format!("terminal_kill failed: {message}"),
                );
            }
            Err(stop) => return Err(stop),
        }
        Ok(())
    }

    fn kill_terminal(&mut self, call_id: &str, create: Value, after: Duration) -> Flow<Value> {
        let terminal_id = self.create_terminal(call_id, create)?;
        let handle = json!({"sessionId": self.session_id(), "terminalId": terminal_id});
        self.wait(after)?;
        self.call("terminal/kill", handle.clone())?;
        let exit = self.call("terminal/wait_for_exit", handle.clone())?;
        self.call("terminal/release", handle)?;
        Ok(exit)
    }

    fn create_terminal(&mut self, call_id: &str, create: Value) -> Flow<String> {
        let created = self.call("terminal/create", create)?;
        let terminal_id = created["terminalId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "in_progress",
            "content": [{"type": "terminal", "terminalId": terminal_id}],
        }));
        Ok(terminal_id)
    }

    fn usage(&mut self, usage: &Usage) {
        let mut update =
            json!({"sessionUpdate": "usage_update", "used": usage.used, "size": usage.size});
        if let Some(amount) = usage.cost {
            update["cost"] = json!({"amount": amount, "currency": "USD"});
        }
        self.update(update);
    }

    // ---- protocol plumbing ----

    fn session_id(&self) -> String {
        self.turn
            .as_ref()
            .map(|turn| turn.session_id.clone())
            .unwrap_or_default()
    }

    fn cwd(&self) -> String {
        self.turn
            .as_ref()
            .map(|turn| turn.cwd.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// An absolute path is kept as is, so a script can aim outside the work dir.
    fn absolute(&self, path: &str) -> String {
        if Path::new(path).is_absolute() {
            return path.to_owned();
        }
        let cwd = self
            .turn
            .as_ref()
            .map(|turn| turn.cwd.clone())
            .unwrap_or_default();
        cwd.join(path).to_string_lossy().into_owned()
    }

    fn update(&self, update: Value) {
        write_message(&json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": self.session_id(), "update": update},
        }));
    }

    fn chunk(&self, kind: &str, text: &str) {
        self.update(json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}));
    }

    fn tool_call(
        &mut self,
        title: &str,
        kind: &str,
        raw_input: Value,
        path: Option<&str>,
    ) -> String {
        self.tool_calls_made += 1;
        let call_id = format!("call-{}", self.tool_calls_made);
        let mut update = json!({
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": title,
            "kind": kind,
            "status": "pending",
        });
        if let Some(path) = path {
            update["locations"] = json!([{"path": path}]);
        }
        if !raw_input.is_null() {
            update["rawInput"] = raw_input;
        }
        self.update(update);
        call_id
    }

    fn command_tool_call(&mut self, command: &str, args: &[String]) -> String {
        let title = std::iter::once(command)
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        self.tool_call(
            &format!("Run {title}"),
            "execute",
            json!({"command": command, "args": args}),
            None,
        )
    }

    fn finish_tool_call(&self, call_id: &str, completed: bool, error: Option<&str>) {
        let mut update = json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": if completed { "completed" } else { "failed" },
        });
        if let Some(error) = error {
            update["content"] =
                json!([{"type": "content", "content": {"type": "text", "text": error}}]);
        }
        self.update(update);
    }

    /// Sends a request to the client and serves other messages until its answer
    /// arrives. A cancel noticed meanwhile ends the turn without waiting further.
    fn call(&mut self, method: &str, params: Value) -> Flow<Value> {
        self.requests_sent += 1;
        let id = format!("agent-{}", self.requests_sent);
        write_message(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let Ok(line) = self.inbox.recv() else {
                end_of_input()
            };
            let Some(message) = parse(&line) else {
                continue;
            };
            let is_our_answer = message.get("method").is_none() && message["id"] == id.as_str();
            if is_our_answer {
                if let Some(error) = message.get("error") {
                    return Err(Failure::Client {
                        code: error["code"].as_i64().unwrap_or_default(),
                        message: error["message"].as_str().unwrap_or("no message").to_owned(),
                    });
                }
                return Ok(message.get("result").cloned().unwrap_or(Value::Null));
            }
            self.handle(message);
            self.check_cancel().map_err(Failure::Stop)?;
        }
    }

    /// Sleeps while serving messages; a cancel ends the sleep and the turn at once.
    fn wait(&mut self, duration: Duration) -> Flow<()> {
        let deadline = Instant::now() + duration;
        loop {
            self.check_cancel().map_err(Failure::Stop)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            match self.inbox.recv_timeout(left) {
                Ok(line) => {
                    if let Some(message) = parse(&line) {
                        self.handle(message);
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                // Nothing more can arrive, so the rest of the sleep is plain.
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(left);
                    return Ok(());
                }
            }
        }
    }

    /// Serves what has already arrived (a cancel above all) between two steps.
    fn take_pending_messages(&mut self) -> Result<(), String> {
        // At end of input the turn still plays out; `serve` exits after it.
        while let Ok(line) = self.inbox.try_recv() {
            if let Some(message) = parse(&line) {
                self.handle(message);
            }
        }
        self.check_cancel()
    }

    fn check_cancel(&self) -> Result<(), String> {
        match &self.turn {
            Some(turn) if turn.cancelled && !self.ignore_cancel => Err(CANCELLED.to_owned()),
            _ => Ok(()),
        }
    }
}

/// A line from the client as JSON; a line that is not JSON gets a parse error back.
fn parse(line: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(line) {
        Ok(message) if message.is_object() => Some(message),
        Ok(_) | Err(_) => {
            log(&format!("not a JSON-RPC message from the client: {line}"));
            write_message(&json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32700, "message": "parse error"},
            }));
            None
        }
    }
}

fn respond(id: &Value, result: Value) {
    write_message(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

fn respond_error(id: &Value, code: i64, message: &str) {
    write_message(
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    );
}

fn write_message(message: &Value) {
    write_line(&message.to_string());
}

/// One line on stdout, flushed at once so the client sees it without delay.
pub fn write_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if let Err(error) = written {
        // The client has gone: nobody is left to talk to.
        log(&format!("stdout closed ({error}); exiting"));
        std::process::exit(0);
    }
}

pub fn log(text: &str) {
    eprintln!("weft-acp-agent: {text}");
}

fn end_of_input() -> ! {
    log("stdin closed; exiting");
    std::process::exit(0);
}
