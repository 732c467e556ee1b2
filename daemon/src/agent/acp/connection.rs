//! One ACP agent process and its session: started, initialised
//! (`initialize`, `session/new` in the work dir), prompted, cancelled,
//! stopped. While a request of Weft's is out, the agent's own requests are
//! served (files, terminals, permission) and its updates recorded; the long
//! ones (a permission a human answers, a terminal's exit) wait beside the
//! reading, so the agent can go on talking meanwhile.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::process::{ChildStdin, ChildStdout};

use super::terminal::{MAX_OUTPUT_BYTES, Terminals};
use super::wire::{self, Id, Incoming, RpcError};
use crate::agent::child_io::{Lines, ReadError, STDERR_FILE, StderrTail, exit_hint, sleep_until};
use crate::agent::event::AgentEvent;
use crate::agent::record::Recorder;
use crate::agent::tools::Workspace;
use crate::agent::transcript::Entry;
use crate::agent::turn::Turn;
use crate::exec::cancel::Cancel;
use crate::exec::interactive::{Interactive, Program};
use crate::llm::Usage;
use crate::util::lock::lock;

/// The protocol version Weft speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// Lines of something other than JSON-RPC tolerated on an agent's stdout
/// (logs that leaked there) before it is taken to speak something else.
const MAX_GARBAGE_LINES: u32 = 200;

/// A file the agent may read or write through `fs/*`, at most.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Requests of the agent's waiting on something (a person, a terminal's
/// exit) at once, at most; more are refused until some are answered.
const MAX_PENDING_REQUESTS: usize = 64;

/// Messages to the agent waiting for it to read them, at most: an agent
/// that stops reading its input while asking for more is stopped.
const MAX_QUEUED_BYTES: usize = 256 * 1024 * 1024;

/// How an agent is started and watched.
#[derive(Debug, Clone)]
pub struct AcpConfig {
    pub program: Program,
    /// How the agent is named in messages: its profile, else its program.
    pub name: String,
    /// The agent says nothing for this long while Weft waits for it (and
    /// it waits for nothing of Weft's): it is taken to hang.
    pub stall_timeout: Duration,
    /// `initialize` and `session/new` must be answered within this.
    pub start_timeout: Duration,
    /// After `session/cancel`, how long the agent gets to end its turn.
    pub cancel_grace: Duration,
    /// Where `transcript.jsonl` and the agent's stderr log go.
    pub record_dir: Option<PathBuf>,
    /// The environment of the commands it runs through `terminal/create`
    /// (the run's, secrets withheld).
    pub terminal_env: Vec<(String, String)>,
}

/// A permission the agent asks for (`session/request_permission`).
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub tool_call_id: String,
    /// What the agent wants to do, in its words.
    pub title: String,
    /// `read`, `edit`, `execute`, … (`other` when not said).
    pub kind: String,
    /// The paths it names, as given (absolute).
    pub locations: Vec<String>,
    pub raw_input: Value,
    pub options: Vec<PermissionOption>,
}

/// One answer the agent offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    pub id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// The answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// The option with this id.
    Selected(String),
    /// No answer (the turn is being cancelled).
    Cancelled,
}

/// What the engine decides for the agent: its permission requests.
pub trait Host: Sync {
    fn permission(&self, request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer>;
}

/// Why an agent session failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcpErrorKind {
    /// It could not be started or set up (missing, exited, another
    /// protocol version, refused the session).
    Start,
    /// It broke the protocol or flooded.
    Protocol,
    /// It exited mid-session.
    Exited,
    /// It said nothing for the stall timeout.
    Stalled,
    /// The run was cancelled.
    Cancelled,
    /// It answered a prompt with an error.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcpError {
    pub kind: AcpErrorKind,
    pub message: String,
}

impl std::fmt::Display for AcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AcpError {}

/// What one prompt came to.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptResult {
    /// The agent's reply: its message chunks, joined.
    pub text: String,
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal` or
    /// `cancelled`.
    pub stop_reason: String,
    /// Tokens, when the agent reported them.
    pub usage: Usage,
    /// US dollars for this prompt, when the agent reported its cost.
    pub cost: Option<f64>,
}

/// An ACP agent process with one session.
pub struct AcpAgent {
    config: AcpConfig,
    process: Interactive,
    writer: Writer,
    lines: Lines<ChildStdout>,
    stderr_tail: StderrTail,
    next_id: u64,
    session_id: String,
    /// What `session/new` answered besides the id (its model and mode
    /// options).
    session_offer: Value,
    workspace: Workspace,
    terminals: Terminals,
    touched: BTreeSet<String>,
    recorder: Option<Recorder>,
    turns: u32,
    garbage: u32,
    session_cost: Option<f64>,
    /// Token totals the agent reported for the whole session so far (some
    /// report running totals), to take each prompt's share.
    session_usage: Usage,
}

impl std::fmt::Debug for AcpAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpAgent")
            .field("name", &self.config.name)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl AcpAgent {
    /// Starts the agent in `workspace`'s root and opens a session there.
    ///
    /// # Errors
    /// [`AcpErrorKind::Start`] (or `Cancelled`), naming the program and
    /// what to do.
    pub async fn start(
        config: AcpConfig,
        workspace: Workspace,
        cancel: &Cancel,
    ) -> Result<AcpAgent, AcpError> {
        let name = config.name.clone();
        let start_error = |message: String| AcpError {
            kind: AcpErrorKind::Start,
            message,
        };
        let mut process = Interactive::spawn(&config.program)
            .await
            .map_err(|e| start_error(format!("cannot start the agent {name}: {e}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            process.stdin.take(),
            process.stdout.take(),
            process.stderr.take(),
        ) else {
            return Err(start_error(format!("the agent {name} has no pipes")));
        };
        let stderr_tail = StderrTail::collect(
            stderr,
            config.record_dir.as_ref().map(|d| d.join(STDERR_FILE)),
        );
        let recorder = config.record_dir.as_deref().map(Recorder::open);
        let mut agent = AcpAgent {
            config,
            process,
            writer: Writer::start(stdin),
            lines: Lines::new(stdout, wire::MAX_LINE_BYTES),
            stderr_tail,
            next_id: 0,
            session_id: String::new(),
            session_offer: Value::Null,
            workspace,
            terminals: Terminals::default(),
            touched: BTreeSet::new(),
            recorder,
            turns: 0,
            garbage: 0,
            session_cost: None,
            session_usage: Usage::default(),
        };
        let deadline = agent.config.start_timeout;
        let setup = async {
            let answer = agent
                .call(
                    "initialize",
                    json!({
                        "protocolVersion": PROTOCOL_VERSION,
                        "clientCapabilities": {
                            "fs": {"readTextFile": true, "writeTextFile": true},
                            "terminal": true
                        },
                        "clientInfo": {"name": "weft", "version": env!("CARGO_PKG_VERSION")}
                    }),
                    cancel,
                )
                .await?;
            let version = answer.get("protocolVersion").and_then(Value::as_u64);
            if version != Some(PROTOCOL_VERSION) {
                return Err(AcpError {
                    kind: AcpErrorKind::Start,
                    message: format!(
                        "the agent {name} speaks ACP version {}; Weft speaks version {PROTOCOL_VERSION} (update the agent or its adapter)",
                        version.map_or_else(|| "(none given)".to_string(), |v| v.to_string())
                    ),
                });
            }
            let cwd = agent.workspace.root().display().to_string();
            let session = agent
                .call("session/new", json!({"cwd": cwd, "mcpServers": []}), cancel)
                .await?;
            match session.get("sessionId").and_then(Value::as_str) {
                Some(id) if !id.is_empty() => {
                    agent.session_id = id.to_string();
                    agent.session_offer = session;
                    Ok(())
                }
                _ => Err(AcpError {
                    kind: AcpErrorKind::Start,
                    message: format!("the agent {name} opened a session without an id"),
                }),
            }
        };
        match tokio::time::timeout(deadline, setup).await {
            Ok(Ok(())) => Ok(agent),
            Ok(Err(mut e)) => {
                if e.kind != AcpErrorKind::Cancelled {
                    e.kind = AcpErrorKind::Start;
                }
                Err(e)
            }
            Err(_) => Err(start_error(format!(
                "the agent {name} did not finish starting within {} (initialize and session/new); is it an ACP agent?{}",
                humantime::format_duration(deadline),
                agent.stderr_hint()
            ))),
        }
    }

    /// Sets one of the session's settings, `what` (its model or its
    /// mode), to `value`: through the agent's config option of that
    /// category (`session/set_config_option`), else its older list
    /// (`session/set_model`, `session/set_mode`). `Ok(false)` when the
    /// agent offers no choice of it.
    ///
    /// # Errors
    /// The agent offers choices but not this one (they are named), or
    /// refused the change.
    pub async fn choose(
        &mut self,
        what: Setting,
        value: &str,
        cancel: &Cancel,
    ) -> Result<bool, AcpError> {
        let name = self.config.name.clone();
        let noun = what.noun();
        let (method, params, offered) = match choices(&self.session_offer, what) {
            Choices::Option { id, values } => (
                "session/set_config_option",
                json!({"sessionId": self.session_id, "configId": id, "value": value}),
                values,
            ),
            Choices::List(values) => {
                let (method, key) = match what {
                    Setting::Model => ("session/set_model", "modelId"),
                    Setting::Mode => ("session/set_mode", "modeId"),
                };
                (
                    method,
                    json!({"sessionId": self.session_id, key: value}),
                    values,
                )
            }
            Choices::None => return Ok(false),
        };
        if !offered.iter().any(|v| v == value) {
            // The agent's list is its own: name a few, not all of it.
            const NAMED: usize = 20;
            let mut named = offered
                .iter()
                .take(NAMED)
                .map(|v| crate::util::text::truncate(v, 80))
                .collect::<Vec<_>>()
                .join(", ");
            if offered.len() > NAMED {
                named.push_str(&format!(" and {} more", offered.len() - NAMED));
            }
            return Err(AcpError {
                kind: AcpErrorKind::Start,
                message: format!("the agent {name} has no {noun} `{value}`; it offers: {named}"),
            });
        }
        self.call(method, params, cancel)
            .await
            .map(|_| true)
            .map_err(|mut e| {
                if e.kind == AcpErrorKind::Failed {
                    e.message = format!("{} (when asked to use {noun} `{value}`)", e.message);
                }
                e
            })
    }

    /// How the agent was started (to tell whether a later stage asks for
    /// the same program).
    #[must_use]
    pub fn config(&self) -> &AcpConfig {
        &self.config
    }

    /// Hands the session on to another stage (a shared `thread_id`): its
    /// transcript goes to `record_dir` from now on, the process group is
    /// recorded at `group_record` too, and [`Self::files_written`] starts
    /// afresh.
    pub fn continue_in(&mut self, record_dir: &Path, group_record: Option<&Path>) {
        self.config.record_dir = Some(record_dir.to_path_buf());
        self.recorder = Some(Recorder::open(record_dir));
        if let Some(record) = group_record {
            self.process.record_group(record);
        }
        self.touched.clear();
    }

    /// The session's id, as the agent named it.
    #[must_use]
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Adds a line to the stage's transcript.
    pub fn record(&mut self, entry: &Entry) {
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.entry(entry);
        }
    }

    /// Paths the agent wrote through `fs/write_text_file`, relative to the
    /// work dir.
    #[must_use]
    pub fn files_written(&self) -> Vec<String> {
        self.touched.iter().cloned().collect()
    }

    /// Sends a prompt and serves the agent until it ends its turn. A run
    /// cancel sends `session/cancel` and gives the agent
    /// [`AcpConfig::cancel_grace`] to end the turn.
    ///
    /// # Errors
    /// The agent exited, stalled, broke the protocol, answered with an
    /// error, or the run was cancelled.
    pub async fn prompt(
        &mut self,
        text: &str,
        host: &dyn Host,
        cancel: &Cancel,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<PromptResult, AcpError> {
        self.turns += 1;
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.entry(&Entry::User {
                text: text.to_string(),
            });
        }
        on_event(AgentEvent::TurnStarted { turn: self.turns });
        let mut turn = Turn::new(self.turns, self.session_cost);
        let id = self
            .send_request(
                "session/prompt",
                json!({"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}),
            )
            .await?;
        let answer = self.wait(id, Some(host), cancel, &mut turn, on_event).await;
        let (usage, cost) = match &answer {
            Ok(result) => self.prompt_spend(result, &turn),
            Err(_) => (Usage::default(), None),
        };
        turn.finish(usage, cost, &mut self.recorder, on_event);
        self.session_cost = turn.session_cost;
        on_event(AgentEvent::TurnCompleted {
            turn: self.turns,
            tool_calls: turn.tool_calls(),
            usage,
            duration: turn.elapsed(),
        });
        let result = answer?;
        let stop_reason = result
            .get("stopReason")
            .and_then(Value::as_str)
            .unwrap_or("end_turn")
            .to_string();
        if stop_reason == "cancelled" {
            return Err(AcpError {
                kind: AcpErrorKind::Cancelled,
                message: format!("the agent {} stopped: cancelled", self.config.name),
            });
        }
        on_event(AgentEvent::ModelCompleted {
            provider: "acp".to_string(),
            model: self.config.name.clone(),
            usage,
            cost,
            finish: stop_reason.clone(),
            duration: turn.elapsed(),
        });
        Ok(PromptResult {
            text: std::mem::take(&mut turn.text),
            stop_reason,
            usage,
            cost,
        })
    }

    /// Ends the session: the agent's stdin is closed, it gets `grace` to
    /// exit, then its process group is killed, with every terminal.
    pub async fn stop(self, grace: Duration) {
        let AcpAgent {
            writer,
            mut process,
            mut terminals,
            ..
        } = self;
        terminals.kill_all();
        // End of input once the queue is written: an agent exits when its
        // client goes.
        drop(writer);
        if tokio::time::timeout(grace, process.wait()).await.is_err() {
            let _ = process.stop(Duration::from_millis(500)).await;
        } else {
            // Whatever it left running in its group goes too.
            let _ = process.stop(Duration::ZERO).await;
        }
    }

    /// This prompt's tokens and cost from what the agent reported: the
    /// prompt result's `usage` (a running total for some agents, so the
    /// session's earlier share is taken off), Gemini's `_meta.quota`, and
    /// the cost's growth over the turn (`usage_update` carries the
    /// session's running cost).
    fn prompt_spend(&mut self, result: &Value, turn: &Turn) -> (Usage, Option<f64>) {
        let number = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0);
        let mut usage = Usage::default();
        if let Some(reported) = result.get("usage") {
            let total = Usage {
                input: number(reported, "inputTokens"),
                output: number(reported, "outputTokens"),
                reasoning: number(reported, "thoughtTokens"),
                cache_read: number(reported, "cachedReadTokens"),
                cache_write: number(reported, "cachedWriteTokens"),
            };
            let earlier = self.session_usage;
            let grew = total.input >= earlier.input && total.output >= earlier.output;
            usage = if grew && earlier != Usage::default() {
                Usage {
                    input: total.input - earlier.input,
                    output: total.output - earlier.output,
                    reasoning: total.reasoning.saturating_sub(earlier.reasoning),
                    cache_read: total.cache_read.saturating_sub(earlier.cache_read),
                    cache_write: total.cache_write.saturating_sub(earlier.cache_write),
                }
            } else {
                total
            };
            self.session_usage = total;
        } else if let Some(count) = result
            .get("_meta")
            .and_then(|m| m.get("quota"))
            .and_then(|q| q.get("token_count"))
        {
            usage.input = number(count, "input_tokens");
            usage.output = number(count, "output_tokens");
        }
        let cost = match (turn.session_cost, self.session_cost) {
            (Some(now), Some(before)) => Some((now - before).max(0.0)),
            (Some(now), None) => Some(now),
            _ => None,
        };
        (usage, cost)
    }

    /// Sends a request and waits for its answer, serving the agent
    /// meanwhile (no permission can be given outside a prompt).
    async fn call(
        &mut self,
        method: &str,
        params: Value,
        cancel: &Cancel,
    ) -> Result<Value, AcpError> {
        let id = self.send_request(method, params).await?;
        let mut turn = Turn::new(0, None);
        let mut ignore = |_: AgentEvent| {};
        self.wait(id, None, cancel, &mut turn, &mut ignore).await
    }

    async fn send_request(&mut self, method: &str, params: Value) -> Result<u64, AcpError> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&wire::request(id, method, params)).await?;
        Ok(id)
    }

    /// Queues a message for the agent (written by [`Writer`]'s task, so
    /// reading goes on while the agent is slow to read).
    async fn write(&mut self, line: &[u8]) -> Result<(), AcpError> {
        match self.writer.send(line.to_vec()) {
            Ok(()) => Ok(()),
            Err(WriteError::Broken(e)) => {
                let hint = self.exit_hint();
                Err(AcpError {
                    kind: AcpErrorKind::Exited,
                    message: format!("cannot write to the agent {}: {e}{hint}", self.config.name),
                })
            }
            Err(WriteError::Backlog) => Err(AcpError {
                kind: AcpErrorKind::Protocol,
                message: format!(
                    "the agent {} stopped reading its input ({} MiB of messages to it are waiting); it was stopped",
                    self.config.name,
                    MAX_QUEUED_BYTES / (1024 * 1024)
                ),
            }),
        }
    }

    /// Reads until the answer to request `id`, serving everything else.
    async fn wait(
        &mut self,
        id: u64,
        host: Option<&dyn Host>,
        cancel: &Cancel,
        turn: &mut Turn,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Value, AcpError> {
        let name = self.config.name.clone();
        let mut pending: FuturesUnordered<BoxFuture<'_, (Id, Result<Value, RpcError>)>> =
            FuturesUnordered::new();
        let mut cancel_sent: Option<tokio::time::Instant> = None;
        let root = self.workspace.root().to_path_buf();
        loop {
            // Only an agent waiting on nothing of Weft's can stall.
            let stall = if pending.is_empty() {
                self.config.stall_timeout
            } else {
                Duration::from_secs(365 * 24 * 3600)
            };
            let grace_over = cancel_sent.map(|at| at + self.config.cancel_grace);
            let text_due = turn.text_due().map(tokio::time::Instant::from_std);
            let incoming = tokio::select! {
                () = sleep_until(text_due), if text_due.is_some() => {
                    turn.flush(on_event);
                    continue;
                }
                read = tokio::time::timeout(stall, self.lines.next()) => read.map(|line| line.map(|l| wire::parse(&l))),
                Some((request, result)) = pending.next(), if !pending.is_empty() => {
                    self.write(&wire::response(&request, result)).await?;
                    continue;
                }
                reason = cancel.cancelled(), if cancel_sent.is_none() => {
                    cancel_sent = Some(tokio::time::Instant::now());
                    if self.session_id.is_empty() {
                        return Err(AcpError {
                            kind: AcpErrorKind::Cancelled,
                            message: format!("cancelled ({reason:?}) while the agent {name} started"),
                        });
                    }
                    let line = wire::notification("session/cancel", json!({"sessionId": self.session_id}));
                    self.write(&line).await?;
                    continue;
                }
                () = sleep_until(grace_over), if grace_over.is_some() => {
                    return Err(AcpError {
                        kind: AcpErrorKind::Cancelled,
                        message: format!(
                            "cancelled; the agent {name} did not end its turn within {} of session/cancel and was stopped",
                            humantime::format_duration(self.config.cancel_grace)
                        ),
                    });
                }
            };
            let message = match incoming {
                Err(_) => {
                    return Err(AcpError {
                        kind: AcpErrorKind::Stalled,
                        message: format!(
                            "the agent {name} said nothing for {} while Weft waited for it; it was stopped (raise the node's `acp.stall_timeout` if it works silently that long){}",
                            humantime::format_duration(stall),
                            self.stderr_hint()
                        ),
                    });
                }
                Ok(Err(ReadError::Closed | ReadError::Io(_))) => {
                    // The pipe closes a moment before the exit is reaped:
                    // wait for it, so the message can say how it ended.
                    let _ = tokio::time::timeout(Duration::from_secs(1), self.process.wait()).await;
                    let when = if self.session_id.is_empty() {
                        "before its session started"
                    } else {
                        "mid-session"
                    };
                    return Err(AcpError {
                        kind: AcpErrorKind::Exited,
                        message: format!("the agent {name} exited {when}{}", self.exit_hint()),
                    });
                }
                Ok(Err(ReadError::TooLong)) => {
                    return Err(AcpError {
                        kind: AcpErrorKind::Protocol,
                        message: format!(
                            "the agent {name} wrote a line longer than {} MiB on stdout; it was stopped",
                            wire::MAX_LINE_BYTES / (1024 * 1024)
                        ),
                    });
                }
                Ok(Ok(message)) => message,
            };
            match message {
                Incoming::Response {
                    id: answered,
                    result,
                } => {
                    if answered.as_u64() == Some(id) {
                        return result.map_err(|e| AcpError {
                            kind: AcpErrorKind::Failed,
                            message: format!(
                                "the agent {name} answered with an error: {e}{}",
                                self.stderr_hint()
                            ),
                        });
                    }
                    // An answer to something no longer waited for: dropped.
                }
                Incoming::Notification { method, params } => {
                    if method == "session/update"
                        && let Some(update) = params.get("update")
                        && let Err(why) = turn.apply(update, &root, &mut self.recorder, on_event)
                    {
                        return Err(AcpError {
                            kind: AcpErrorKind::Protocol,
                            message: format!("the agent {name} was stopped: {why}"),
                        });
                    }
                }
                Incoming::Request {
                    id: request,
                    method,
                    params,
                } => match self.serve(&method, &params, host, cancel).await {
                    Served::Now(result) => {
                        self.write(&wire::response(&request, result)).await?;
                    }
                    Served::Later(_) if pending.len() >= MAX_PENDING_REQUESTS => {
                        let refused = RpcError::new(
                            RpcError::INTERNAL,
                            format!(
                                "more than {MAX_PENDING_REQUESTS} requests are waiting already; wait for their answers"
                            ),
                        );
                        self.write(&wire::response(&request, Err(refused))).await?;
                    }
                    Served::Later(future) => {
                        pending.push(Box::pin(async move { (request, future.await) }));
                    }
                },
                Incoming::Garbage(line) => {
                    self.garbage += 1;
                    if self.garbage > MAX_GARBAGE_LINES {
                        return Err(AcpError {
                            kind: AcpErrorKind::Protocol,
                            message: format!(
                                "the agent {name} wrote more than {MAX_GARBAGE_LINES} lines that are not ACP messages on stdout (the last: {line:?}); is it an ACP agent, or started without its ACP flag?"
                            ),
                        });
                    }
                }
            }
        }
    }

    /// Serves one request of the agent's.
    async fn serve<'h>(
        &mut self,
        method: &str,
        params: &Value,
        host: Option<&'h dyn Host>,
        cancel: &Cancel,
    ) -> Served<'h> {
        let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
        match method {
            "fs/read_text_file" => Served::Now(self.read_file(
                text("path"),
                params.get("line").and_then(Value::as_u64),
                params.get("limit").and_then(Value::as_u64),
            )),
            "fs/write_text_file" => Served::Now(self.write_file(text("path"), text("content"))),
            "session/request_permission" => {
                let request = permission_request(params);
                match host {
                    Some(host) => {
                        let cancel = cancel.clone();
                        Served::Later(Box::pin(async move {
                            let answer = tokio::select! {
                                answer = host.permission(request) => answer,
                                _ = cancel.cancelled() => PermissionAnswer::Cancelled,
                            };
                            Ok(match answer {
                                PermissionAnswer::Selected(option) => {
                                    json!({"outcome": {"outcome": "selected", "optionId": option}})
                                }
                                PermissionAnswer::Cancelled => {
                                    json!({"outcome": {"outcome": "cancelled"}})
                                }
                            })
                        }))
                    }
                    None => Served::Now(Ok(json!({"outcome": {"outcome": "cancelled"}}))),
                }
            }
            "terminal/create" => Served::Now(self.create_terminal(params).await),
            "terminal/output" => Served::Now(self.terminals.output(text("terminalId"))),
            "terminal/wait_for_exit" => match self.terminals.waiter(text("terminalId")) {
                Ok(waiter) => Served::Later(Box::pin(async move { Ok(waiter.await) })),
                Err(e) => Served::Now(Err(e)),
            },
            "terminal/kill" => Served::Now(self.terminals.kill(text("terminalId"))),
            "terminal/release" => Served::Now(self.terminals.release(text("terminalId"))),
            other => Served::Now(Err(RpcError::new(
                RpcError::METHOD_NOT_FOUND,
                format!("Weft does not serve `{other}`"),
            ))),
        }
    }

    fn read_file(
        &mut self,
        path: &str,
        line: Option<u64>,
        limit: Option<u64>,
    ) -> Result<Value, RpcError> {
        let resolved = self
            .workspace
            .resolve(path)
            .map_err(|e| RpcError::invalid_params(e.content))?;
        let bytes = crate::limits::read_capped(&resolved, MAX_FILE_BYTES)
            .map_err(|e| RpcError::new(RpcError::NOT_FOUND, format!("cannot read {path}: {e}")))?;
        let text = String::from_utf8_lossy(&bytes);
        self.workspace.mark_read(&resolved);
        let content = match (line, limit) {
            (None, None) => text.into_owned(),
            (line, limit) => {
                let skip =
                    usize::try_from(line.unwrap_or(1).saturating_sub(1)).unwrap_or(usize::MAX);
                let take = limit
                    .and_then(|l| usize::try_from(l).ok())
                    .unwrap_or(usize::MAX);
                text.split_inclusive('\n').skip(skip).take(take).collect()
            }
        };
        Ok(json!({"content": content}))
    }

    fn write_file(&mut self, path: &str, content: &str) -> Result<Value, RpcError> {
        let resolved = self
            .workspace
            .resolve(path)
            .map_err(|e| RpcError::invalid_params(e.content))?;
        if let Some(parent) = resolved.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                RpcError::new(
                    RpcError::INTERNAL,
                    format!("cannot create {}: {e}", parent.display()),
                )
            })?;
        }
        std::fs::write(&resolved, content)
            .map_err(|e| RpcError::new(RpcError::INTERNAL, format!("cannot write {path}: {e}")))?;
        self.touched.insert(self.workspace.relative(&resolved));
        Ok(json!({}))
    }

    async fn create_terminal(&mut self, params: &Value) -> Result<Value, RpcError> {
        let command = params
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .ok_or_else(|| RpcError::invalid_params("terminal/create needs a command"))?;
        let args = params
            .get("args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let work_dir = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) => self
                .workspace
                .resolve(cwd)
                .map_err(|e| RpcError::invalid_params(e.content))?,
            None => self.workspace.root().to_path_buf(),
        };
        let env = params
            .get("env")
            .and_then(Value::as_array)
            .map(|vars| {
                vars.iter()
                    .filter_map(|v| {
                        Some((
                            v.get("name")?.as_str()?.to_string(),
                            v.get("value")?.as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let limit = params
            .get("outputByteLimit")
            .and_then(Value::as_u64)
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(MAX_OUTPUT_BYTES);
        let program = Program {
            program: command.to_string(),
            args,
            work_dir,
            base_env: self.config.terminal_env.clone(),
            env,
            group_record: None,
        };
        let id = self.terminals.create(program, limit).await?;
        Ok(json!({"terminalId": id}))
    }

    /// The end of the agent's stderr, for an error message.
    fn stderr_hint(&self) -> String {
        self.stderr_tail.hint()
    }

    /// How the agent exited (if it has), and the end of its stderr.
    fn exit_hint(&mut self) -> String {
        format!(
            "{}{}",
            exit_hint(self.process.try_status()),
            self.stderr_hint()
        )
    }
}

/// How a request is answered: at once, or when a future resolves.
enum Served<'h> {
    Now(Result<Value, RpcError>),
    Later(BoxFuture<'h, Result<Value, RpcError>>),
}

/// `session/request_permission`'s params as a [`PermissionRequest`].
fn permission_request(params: &Value) -> PermissionRequest {
    let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
    let text = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    PermissionRequest {
        tool_call_id: text(&call, "toolCallId"),
        title: text(&call, "title"),
        kind: call
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("other")
            .to_string(),
        locations: call
            .get("locations")
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|l| l.get("path")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        raw_input: call.get("rawInput").cloned().unwrap_or(Value::Null),
        options: params
            .get("options")
            .and_then(Value::as_array)
            .map(|options| {
                options
                    .iter()
                    .map(|o| PermissionOption {
                        id: text(o, "optionId"),
                        name: text(o, "name"),
                        kind: text(o, "kind"),
                    })
                    .filter(|o| !o.id.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Writes to the agent's stdin from a task of its own, in order.
struct Writer {
    queue: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes sent to the task and not yet written.
    queued: Arc<std::sync::atomic::AtomicUsize>,
    /// Why writing stopped, once it has.
    broken: Arc<Mutex<Option<String>>>,
}

enum WriteError {
    Broken(String),
    Backlog,
}

impl Writer {
    fn start(mut stdin: ChildStdin) -> Writer {
        use std::sync::atomic::Ordering;
        let (queue, mut messages) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let broken = Arc::new(Mutex::new(None));
        let (left, why) = (Arc::clone(&queued), Arc::clone(&broken));
        tokio::spawn(async move {
            while let Some(message) = messages.recv().await {
                let written = async {
                    stdin.write_all(&message).await?;
                    stdin.flush().await
                }
                .await;
                left.fetch_sub(message.len(), Ordering::Relaxed);
                if let Err(e) = written {
                    *lock(&why) = Some(e.to_string());
                    break;
                }
            }
            // Dropping stdin here is the agent's end of input.
        });
        Writer {
            queue,
            queued,
            broken,
        }
    }

    fn send(&self, message: Vec<u8>) -> Result<(), WriteError> {
        use std::sync::atomic::Ordering;
        if let Some(why) = lock(&self.broken).clone() {
            return Err(WriteError::Broken(why));
        }
        if self.queued.load(Ordering::Relaxed) + message.len() > MAX_QUEUED_BYTES {
            return Err(WriteError::Backlog);
        }
        self.queued.fetch_add(message.len(), Ordering::Relaxed);
        self.queue
            .send(message)
            .map_err(|_| WriteError::Broken("the writer stopped".to_string()))
    }
}

/// A setting of a session the client may choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The model the agent works with.
    Model,
    /// Its mode (for Claude Code: whether it asks before it edits).
    Mode,
}

impl Setting {
    fn noun(self) -> &'static str {
        match self {
            Setting::Model => "model",
            Setting::Mode => "mode",
        }
    }
}

/// How an agent lets the client choose a setting, from `session/new`'s
/// answer.
#[derive(Debug, PartialEq, Eq)]
enum Choices {
    /// A config option of the setting's category (its id) and the values
    /// it takes.
    Option {
        id: String,
        values: Vec<String>,
    },
    /// The older lists: `models.availableModels`, `modes.availableModes`.
    List(Vec<String>),
    None,
}

fn choices(offer: &Value, what: Setting) -> Choices {
    let category = what.noun();
    let options = offer.get("configOptions").and_then(Value::as_array);
    let option = options.into_iter().flatten().find(|o| {
        o.get("category").and_then(Value::as_str) == Some(category)
            || (o.get("category").is_none()
                && o.get("id").and_then(Value::as_str) == Some(category))
    });
    if let Some(option) = option
        && let Some(id) = option.get("id").and_then(Value::as_str)
    {
        // Options come flat (`{value, name}`) or in groups (`{group,
        // name, options: [...]}`).
        let mut values = Vec::new();
        for item in option
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match item.get("options").and_then(Value::as_array) {
                Some(group) => values.extend(
                    group
                        .iter()
                        .filter_map(|o| o.get("value").and_then(Value::as_str))
                        .map(str::to_string),
                ),
                None => values.extend(
                    item.get("value")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                ),
            }
        }
        return Choices::Option {
            id: id.to_string(),
            values,
        };
    }
    let (list, available, key) = match what {
        Setting::Model => ("models", "availableModels", "modelId"),
        Setting::Mode => ("modes", "availableModes", "id"),
    };
    match offer
        .get(list)
        .and_then(|m| m.get(available))
        .and_then(Value::as_array)
    {
        Some(items) => Choices::List(
            items
                .iter()
                .filter_map(|m| m.get(key).and_then(Value::as_str))
                .map(str::to_string)
                .collect(),
        ),
        None => Choices::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_read_from_config_options_else_the_older_lists() {
        let grouped = json!({"configOptions": [
            {"id": "mode", "category": "mode", "options": [{"value": "ask"}]},
            {"id": "pick", "category": "model", "type": "select", "options": [
                {"group": "fast", "name": "Fast", "options": [{"value": "haiku", "name": "Haiku"}]},
                {"value": "opus", "name": "Opus"}
            ]}
        ]});
        assert_eq!(
            choices(&grouped, Setting::Model),
            Choices::Option {
                id: "pick".to_string(),
                values: vec!["haiku".to_string(), "opus".to_string()]
            }
        );
        let listed = json!({"models": {"currentModelId": "a", "availableModels": [
            {"modelId": "a", "name": "A"}, {"modelId": "b", "name": "B"}
        ]}});
        assert_eq!(
            choices(&listed, Setting::Model),
            Choices::List(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(
            choices(&grouped, Setting::Mode),
            Choices::Option {
                id: "mode".to_string(),
                values: vec!["ask".to_string()]
            }
        );
        let modes = json!({"modes": {"currentModeId": "auto", "availableModes": [
            {"id": "default", "name": "Default"}, {"id": "auto", "name": "Auto"}
        ]}});
        assert_eq!(
            choices(&modes, Setting::Mode),
            Choices::List(vec!["default".to_string(), "auto".to_string()])
        );
        assert_eq!(
            choices(&json!({"sessionId": "s"}), Setting::Model),
            Choices::None
        );
    }
}
