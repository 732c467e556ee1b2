//! The agent loop: model turn → tool calls → tool results → model turn,
//! until the model ends a turn without tool calls (core-concepts/agents.mdx).
//!
//! Around each model call: limits (turns, tool rounds, tokens, wall clock),
//! steering messages, and cancellation; after each turn: loop detection and
//! compaction. Everything is reported as [`AgentEvent`]s and written to the
//! stage's `transcript.jsonl` as it happens.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::compaction;
use super::config::SessionConfig;
use super::event::AgentEvent;
use super::history::History;
use super::instructions;
use super::loop_detection::{self, LoopDetector, Verdict};
use super::profile::Profile;
use super::record::Recorder;
use super::system_prompt::{self, Environment};
use super::tools::{Tool, ToolOutput, Workspace, cut_for_model};
use super::transcript::{Call, Entry};
use crate::exec::cancel::Cancel;
use crate::llm::{
    CallEvent, Completion, FinishReason, LlmClient, LlmError, Message, Part, Request, StreamEvent,
    ToolCall, ToolResult, Usage,
};
use crate::model::Spend;

/// Streamed text is passed on at least this often…
const TEXT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// …or when this much is waiting.
const TEXT_FLUSH_BYTES: usize = 2048;
/// The most characters of a tool's output put on its `ToolCompleted` event.
const PREVIEW_CHARS: usize = 2000;
/// The most characters of a tool's output in its transcript line.
const TRANSCRIPT_SUMMARY_CHARS: usize = 500;
/// The most tool calls of one turn that are run; the rest are answered with
/// an error (a model asking for thousands at once is broken).
const MAX_CALLS_PER_TURN: usize = 64;
/// Prefix of a steering message as the model sees it.
const STEERING_PREFIX: &str = "[Steering]";

/// Messages for a running session, delivered before its next model call
/// (human-tools/steering.mdx). Cheap to clone; the engine hands one to
/// whoever may steer (the daemon's `run.steer`).
#[derive(Debug, Clone, Default)]
pub struct Steering(Arc<Mutex<Vec<String>>>);

impl Steering {
    /// Queues `text` for the model's next turn.
    pub fn send(&self, text: impl Into<String>) {
        crate::util::lock::lock(&self.0).push(text.into());
    }

    /// Everything queued so far, oldest first.
    #[must_use]
    pub fn drain(&self) -> Vec<String> {
        std::mem::take(&mut *crate::util::lock::lock(&self.0))
    }
}

/// What a finished exchange gave: the model's final text.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
}

/// Why a session stopped before the model finished.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionError {
    pub kind: SessionErrorKind,
    /// For the stage's failure reason: names the limit, the error.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SessionErrorKind {
    /// `max_turns`, `max_tool_rounds`, `max_stage_tokens` or the timeout.
    Limit,
    /// The model kept looping after it was warned.
    Loop,
    /// A model call failed for good (after retries and failovers).
    Llm(LlmError),
    /// The run was cancelled.
    Cancelled,
}

impl SessionError {
    fn limit(message: String) -> SessionError {
        SessionError {
            kind: SessionErrorKind::Limit,
            message,
        }
    }

    fn llm(error: LlmError) -> SessionError {
        SessionError {
            message: error.to_string(),
            kind: SessionErrorKind::Llm(error),
        }
    }
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SessionError {}

/// Asked before every model turn of a session with what the session has
/// spent so far; it may wait (a run paused at its budget). `Err` stops the
/// session as cancelled, with the reason given.
pub trait CallGate: Sync {
    fn before_call<'g>(
        &'g self,
        spent: Spend,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'g>>;
}

/// One agent session: a conversation with tools. Built per stage attempt.
pub struct Session<'a> {
    pub(crate) config: SessionConfig,
    pub(crate) client: &'a LlmClient,
    /// Consulted before each turn (the run's budget).
    gate: Option<&'a dyn CallGate>,
    /// Shared with the blocking threads read tools run on.
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) steering: Steering,
    state: State,
}

/// What the session has done so far.
#[derive(Default)]
struct State {
    /// Set up by the first `send`.
    setup: Option<Setup>,
    /// When the first `send` began (the timeout counts from there).
    started: Option<Instant>,
    history: History,
    /// Model calls of the conversation (compaction's are not counted).
    turns: u32,
    /// Turns that asked for tools.
    tool_rounds: u32,
    /// Every call, compaction's included.
    spend: Spend,
    touched: BTreeSet<String>,
    detector: LoopDetector,
    recorder: Option<Recorder>,
    /// Tool calls run so far (names the output files).
    tool_seq: u32,
    /// A recording error was reported already.
    record_error_reported: bool,
}

/// What the first `send` settles for the whole session.
struct Setup {
    tools: Vec<Tool>,
    /// The tools' declarations, as sent every turn.
    specs: Vec<crate::llm::ToolSpec>,
    system: String,
    context_window: u64,
}

/// A tool call checked and ready to run, or already answered.
struct Planned<'c> {
    call: &'c ToolCall,
    /// `Err`: the error result (unknown tool, not allowed, bad arguments).
    tool: Result<Tool, ToolOutput>,
}

/// A call's result with how long it took.
struct Ran {
    output: ToolOutput,
    duration: Duration,
}

impl<'a> Session<'a> {
    #[must_use]
    pub fn new(config: SessionConfig, client: &'a LlmClient, workspace: Workspace) -> Session<'a> {
        let recorder = config.record_dir.as_deref().map(Recorder::open);
        Session {
            config,
            client,
            gate: None,
            workspace: Arc::new(workspace),
            steering: Steering::default(),
            state: State {
                recorder,
                ..State::default()
            },
        }
    }

    /// Every turn first asks `gate` whether it may call the model.
    #[must_use]
    pub fn gated(mut self, gate: &'a dyn CallGate) -> Session<'a> {
        self.gate = Some(gate);
        self
    }

    /// The session continues `conversation` (a thread shared with earlier
    /// stages at full fidelity): its first `send` adds to it.
    #[must_use]
    pub fn continuing(mut self, conversation: Vec<Message>) -> Session<'a> {
        self.state.history = History::from_messages(conversation);
        self
    }

    /// The conversation so far: what a shared thread goes on from.
    #[must_use]
    pub fn conversation(&self) -> &[Message] {
        self.state.history.messages()
    }

    /// The handle that steers this session.
    #[must_use]
    pub fn steering(&self) -> Steering {
        self.steering.clone()
    }

    /// Sends `text` as a user message and runs the loop until the model
    /// ends a turn without tool calls; the first call sends the system
    /// prompt too. Called again (an `output_schema` repair), it continues
    /// the same conversation.
    ///
    /// # Errors
    /// When a limit is reached, the model loops, a call fails or the run is
    /// cancelled.
    pub async fn send(
        &mut self,
        text: &str,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Reply, SessionError> {
        let result = self.exchange(text, on_event).await;
        let reason = match &result {
            Ok(_) => "completed".to_string(),
            Err(e) => e.message.clone(),
        };
        self.record(Entry::End { reason }, on_event);
        result
    }

    /// Paths written by successful calls, relative to the work dir, sorted
    /// and deduplicated (`files_touched`).
    #[must_use]
    pub fn files_touched(&self) -> Vec<String> {
        self.state.touched.iter().cloned().collect()
    }

    /// Tokens spent so far, over every call.
    #[must_use]
    pub fn usage(&self) -> Usage {
        self.state.spend.usage
    }

    /// Tokens and dollars spent so far, over every call (compaction's
    /// included).
    #[must_use]
    pub fn spend(&self) -> Spend {
        self.state.spend
    }

    async fn exchange(
        &mut self,
        text: &str,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Reply, SessionError> {
        let started = *self.state.started.get_or_insert_with(Instant::now);
        let deadline = self.config.limits.timeout.map(|t| started + t);
        if self.state.setup.is_none() {
            self.set_up(on_event)?;
        }
        self.state.history.push(Message::user(text));
        self.record(
            Entry::User {
                text: text.to_string(),
            },
            on_event,
        );

        loop {
            let limits = &self.config.limits;
            if self.state.turns >= limits.max_turns {
                return Err(SessionError::limit(format!(
                    "reached max_turns ({})",
                    limits.max_turns
                )));
            }
            // Before steering: a message sent while the run waited on its
            // budget reaches the next turn.
            self.pass_gate().await?;
            self.deliver_steering(on_event);
            self.state.turns += 1;
            let turn = self.state.turns;
            let turn_started = Instant::now();
            on_event(AgentEvent::TurnStarted { turn });

            let completion = self.call_model(turn, deadline, on_event).await?;
            let response = &completion.response;
            let calls: Vec<ToolCall> = response.tool_calls().into_iter().cloned().collect();
            self.state.history.push(response.to_message());

            // A finished answer is kept even if it crossed the budget: the
            // budget stops further work, not work already paid for.
            if calls.is_empty() {
                on_event(AgentEvent::TurnCompleted {
                    turn,
                    tool_calls: 0,
                    usage: response.usage,
                    duration: turn_started.elapsed(),
                });
                return Ok(Reply {
                    text: response.text(),
                });
            }

            self.check_tokens()?;
            if self.state.tool_rounds >= self.config.limits.max_tool_rounds {
                return Err(SessionError::limit(format!(
                    "reached max_tool_rounds ({})",
                    self.config.limits.max_tool_rounds
                )));
            }
            self.state.tool_rounds += 1;
            let mut results = self.run_tools(&calls, deadline, on_event).await?;
            on_event(AgentEvent::TurnCompleted {
                turn,
                tool_calls: u32::try_from(calls.len()).unwrap_or(u32::MAX),
                usage: response.usage,
                duration: turn_started.elapsed(),
            });

            let verdict = self
                .state
                .detector
                .record(calls.iter().map(|c| (c.name.as_str(), &c.arguments)));
            match verdict {
                Verdict::Fine => {}
                Verdict::Warn { period, tools } => {
                    results
                        .parts
                        .push(Part::Text(loop_detection::WARNING.to_string()));
                    on_event(AgentEvent::LoopDetected {
                        pattern_len: period,
                        tools,
                    });
                    self.record(
                        Entry::LoopDetected {
                            message: loop_detection::WARNING.to_string(),
                        },
                        on_event,
                    );
                }
                Verdict::Fail { period, tools } => {
                    return Err(SessionError {
                        kind: SessionErrorKind::Loop,
                        message: format!(
                            "the model kept repeating the same tool calls ({}; a cycle of {period} turns) after it was warned",
                            tools.join(", ")
                        ),
                    });
                }
            }
            self.state.history.push(results);
            self.compact_if_needed(deadline, on_event).await?;
        }
    }

    /// Resolves the model, picks the profile and tools, builds the system
    /// prompt and writes the session's first transcript lines.
    fn set_up(
        &mut self,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), SessionError> {
        let request = &self.config.request;
        let target = self
            .client
            .resolve(request.model.as_deref(), request.provider.as_deref())
            .map_err(SessionError::llm)?;
        let profile = Profile::for_wire(target.wire);
        let tools = profile.tools(
            self.config.permissions,
            self.config.web_search_key.is_some(),
        );
        let environment = Environment::detect(self.workspace.root(), &target.model);
        let instruction_files = instructions::discover(&self.config.instructions_from, profile);
        let system = system_prompt::build(profile, &environment, &tools, &instruction_files);
        let context_window = self
            .client
            .catalog()
            .lookup_for(&target.provider, &target.model)
            .and_then(|m| m.context_window)
            .unwrap_or(compaction::DEFAULT_CONTEXT_WINDOW);
        self.record(
            Entry::Session {
                provider: target.provider.clone(),
                model: target.model.clone(),
                profile: profile_name(profile).to_string(),
                tools: tools.iter().map(|t| t.name().to_string()).collect(),
                permissions: self.config.permissions.as_str().to_string(),
            },
            on_event,
        );
        self.record(
            Entry::System {
                text: system.clone(),
            },
            on_event,
        );
        self.state.setup = Some(Setup {
            specs: tools.iter().map(|t| t.spec()).collect(),
            tools,
            system,
            context_window,
        });
        Ok(())
    }

    fn setup(&self) -> &Setup {
        // `exchange` sets it up before anything reads it.
        self.state
            .setup
            .as_ref()
            .unwrap_or_else(|| unreachable!("set_up runs first"))
    }

    /// Steering messages queued since the last model call, added to the
    /// conversation's last user message (or as one).
    fn deliver_steering(&mut self, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        for text in self.steering.drain() {
            let part = Part::Text(format!("{STEERING_PREFIX} {text}"));
            self.state.history.add_to_user_turn(part);
            on_event(AgentEvent::Steered { text: text.clone() });
            self.record(Entry::Steering { text }, on_event);
        }
    }

    /// One model call of the conversation, with streamed text coalesced,
    /// recorded and counted.
    async fn call_model(
        &mut self,
        turn: u32,
        deadline: Option<Instant>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Completion, SessionError> {
        let setup = self.setup();
        let mut request = Request {
            system: Some(setup.system.clone()),
            tools: setup.specs.clone(),
            ..self.config.request.clone()
        };
        // Lent to the request rather than copied: the conversation is the
        // bulk of a session's memory, and this is every turn.
        request.messages = self.state.history.lend();
        let started = Instant::now();
        let mut text = TextBuffer::new(turn);
        let result = {
            let on_call = |event: CallEvent| match event {
                CallEvent::Delta(StreamEvent::TextDelta { text: delta }) => {
                    text.push(&delta, &mut *on_event);
                }
                CallEvent::Delta(_) => {}
                other => {
                    text.flush(&mut *on_event);
                    on_event(AgentEvent::Call(other));
                }
            };
            let call = self.client.complete(&request, on_call);
            guard(
                &self.workspace.cancel,
                deadline,
                self.config.limits.timeout,
                call,
            )
            .await
        };
        self.state
            .history
            .give_back(std::mem::take(&mut request.messages));
        text.flush(on_event);
        let completion = result?.map_err(SessionError::llm)?;
        self.count(&completion, started.elapsed(), on_event);
        let response = &completion.response;
        self.record(
            Entry::Assistant {
                turn,
                text: response.text(),
                reasoning: response.reasoning(),
                tool_calls: response
                    .tool_calls()
                    .into_iter()
                    .map(|c| Call {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
                usage: response.usage,
                cost: completion.cost,
                duration_ms: millis(started.elapsed()),
            },
            on_event,
        );
        Ok(completion)
    }

    /// Adds a call to the spend and reports it.
    fn count(
        &mut self,
        completion: &Completion,
        duration: Duration,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        let response = &completion.response;
        self.state.spend.add_call(response.usage, completion.cost);
        on_event(AgentEvent::ModelCompleted {
            provider: completion.target.provider.clone(),
            model: response.model.clone(),
            usage: response.usage,
            cost: completion.cost,
            finish: finish_name(&response.finish).to_string(),
            duration,
        });
    }

    fn check_tokens(&self) -> Result<(), SessionError> {
        let Some(max) = self.config.limits.max_tokens else {
            return Ok(());
        };
        let used = self.state.spend.usage.input + self.state.spend.usage.output;
        if used > max {
            return Err(SessionError::limit(format!(
                "reached max_stage_tokens ({max}): {used} tokens used"
            )));
        }
        Ok(())
    }

    /// Runs one turn's calls — consecutive read-only calls at once, the
    /// others one by one in the model's order — and returns the message
    /// of their results.
    async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        deadline: Option<Instant>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Message, SessionError> {
        let planned: Vec<Planned<'_>> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| Planned {
                call,
                tool: if i < MAX_CALLS_PER_TURN {
                    self.check_call(call)
                } else {
                    Err(ToolOutput::error(format!(
                        "not run: at most {MAX_CALLS_PER_TURN} tool calls are run per turn"
                    )))
                },
            })
            .collect();

        let mut results = Vec::with_capacity(planned.len());
        let mut i = 0;
        while i < planned.len() {
            // A batch: one call, or a run of read-only calls.
            let mut end = i + 1;
            if is_read_only(&planned[i]) {
                while end < planned.len() && is_read_only(&planned[end]) {
                    end += 1;
                }
            }
            let batch = &planned[i..end];
            for p in batch {
                let tool = p.tool.as_ref().ok().copied();
                on_event(AgentEvent::ToolStarted {
                    call_id: p.call.id.clone(),
                    tool: p.call.name.clone(),
                    summary: tool.map_or_else(
                        || crate::util::text::one_line(&p.call.arguments.to_string(), 120),
                        |t| t.summarize(&p.call.arguments),
                    ),
                    arguments: p.call.arguments.clone(),
                });
            }
            let runs = futures_util::future::join_all(batch.iter().map(|p| {
                run_call(
                    Arc::clone(&self.workspace),
                    p.tool.clone(),
                    p.call.arguments.clone(),
                )
            }));
            let ran = guard(
                &self.workspace.cancel,
                deadline,
                self.config.limits.timeout,
                runs,
            )
            .await?;
            for (p, ran) in batch.iter().zip(ran) {
                results.push(self.finish_call(p, ran, on_event));
            }
            i = end;
        }
        Ok(Message::tool_results(results))
    }

    /// Whether a call may run: a tool offered to this session, allowed by
    /// its permissions, with an object of arguments.
    fn check_call(&self, call: &ToolCall) -> Result<Tool, ToolOutput> {
        let offered = &self.setup().tools;
        let names = || {
            offered
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let tool = match Tool::from_name(&call.name) {
            Some(tool) if offered.contains(&tool) => tool,
            Some(tool) if !tool.allowed(self.config.permissions) => {
                return Err(ToolOutput::error(format!(
                    "`{}` is not allowed: this agent's permissions are {}. Available tools: {}",
                    call.name,
                    self.config.permissions.as_str(),
                    names()
                )));
            }
            _ => {
                return Err(ToolOutput::error(format!(
                    "unknown tool `{}`. Available tools: {}",
                    crate::util::text::truncate(&call.name, 100),
                    names()
                )));
            }
        };
        if !call.arguments.is_object() {
            return Err(ToolOutput::error(format!(
                "the arguments of `{}` must be a JSON object matching its schema, not {}",
                call.name,
                crate::util::text::truncate(&call.arguments.to_string(), 200)
            )));
        }
        Ok(tool)
    }

    /// Keeps a call's full output, cuts it for the model, notes what it
    /// wrote, and reports it.
    fn finish_call(
        &mut self,
        planned: &Planned<'_>,
        ran: Ran,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> ToolResult {
        let call = planned.call;
        let output = ran.output;
        self.state.tool_seq += 1;
        let seq = self.state.tool_seq;
        // An output the transcript line holds whole needs no file of its
        // own (and a file per call would make each round cost more than the
        // last: creating files slows as the directory grows).
        let output_file = if output.content.len() <= TRANSCRIPT_SUMMARY_CHARS {
            None
        } else {
            self.state
                .recorder
                .as_mut()
                .and_then(|r| r.tool_output(seq, &call.name, &output.content))
        };
        let (limit, cut) = match &planned.tool {
            Ok(tool) => tool.output_limit(),
            Err(_) => (10_000, super::tools::Cut::HeadTail),
        };
        let for_model = cut_for_model(&output.content, limit, cut, output_file.as_deref());
        if !output.is_error {
            self.state.touched.extend(output.touched.iter().cloned());
        }
        let touched = if output.is_error {
            Vec::new()
        } else {
            output.touched.clone()
        };
        let output_bytes = output.content.len() as u64;
        on_event(AgentEvent::ToolCompleted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            duration: ran.duration,
            is_error: output.is_error,
            preview: crate::util::text::truncate(&for_model, PREVIEW_CHARS),
            output_bytes,
            touched: touched.clone(),
        });
        self.record(
            Entry::Tool {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                is_error: output.is_error,
                duration_ms: millis(ran.duration),
                summary: crate::util::text::truncate(&output.content, TRANSCRIPT_SUMMARY_CHARS),
                output_bytes,
                output_file,
                touched,
            },
            on_event,
        );
        ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: for_model,
            is_error: output.is_error,
        }
    }

    /// Asks the gate, if the session has one, whether it may call the
    /// model having spent what it has; `Err` (cancelled) when it may not.
    async fn pass_gate(&self) -> Result<(), SessionError> {
        match self.gate {
            Some(gate) => {
                gate.before_call(self.state.spend)
                    .await
                    .map_err(|message| SessionError {
                        kind: SessionErrorKind::Cancelled,
                        message,
                    })
            }
            None => Ok(()),
        }
    }

    /// Summarises older turns when the conversation nears the context
    /// window. A failed summary is reported and the session goes on.
    async fn compact_if_needed(
        &mut self,
        deadline: Option<Instant>,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), SessionError> {
        let setup = self.setup();
        let context_window = setup.context_window;
        let estimated = self.state.history.estimate_tokens(&setup.system);
        if !compaction::needed(estimated, context_window) {
            return Ok(());
        }
        let Some(at) = compaction::split_point(self.state.history.messages()) else {
            return Ok(());
        };
        // A summary is a model call like any other: the budget may stop it.
        self.pass_gate().await?;
        let files = self.files_touched();
        let old = &self.state.history.messages()[..at];
        let request = Request {
            system: Some(compaction::SUMMARY_SYSTEM.to_string()),
            messages: vec![Message::user(format!(
                "The session so far:\n\n{}\nWrite the summary now.",
                compaction::render(old, &files)
            ))],
            tools: Vec::new(),
            stream: false,
            ..self.config.request.clone()
        };
        let started = Instant::now();
        let call = self.client.complete(&request, |event| {
            if !matches!(event, CallEvent::Delta(_)) {
                on_event(AgentEvent::Call(event));
            }
        });
        let result = guard(
            &self.workspace.cancel,
            deadline,
            self.config.limits.timeout,
            call,
        )
        .await?;
        let completion = match result {
            Ok(c) if !c.response.text().trim().is_empty() => c,
            Ok(c) => {
                self.count(&c, started.elapsed(), on_event);
                on_event(AgentEvent::CompactionFailed {
                    error: "the summary came back empty".into(),
                });
                return self.check_tokens();
            }
            Err(e) => {
                on_event(AgentEvent::CompactionFailed {
                    error: e.to_string(),
                });
                return Ok(());
            }
        };
        self.count(&completion, started.elapsed(), on_event);
        let summary = completion.response.text();
        let original_turns = compaction::turns(self.state.history.messages());
        self.state
            .history
            .replace_before(at, compaction::summary_message(&summary, &files));
        let preserved_turns = compaction::turns(self.state.history.messages());
        on_event(AgentEvent::Compacted {
            original_turns,
            preserved_turns,
            estimated_tokens: estimated,
            context_window,
        });
        self.record(
            Entry::Compaction {
                summary,
                original_turns,
                preserved_turns,
            },
            on_event,
        );
        self.check_tokens()
    }

    /// Appends a transcript line; the first recording error is reported
    /// as a warning.
    fn record(&mut self, entry: Entry, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        let Some(recorder) = self.state.recorder.as_mut() else {
            return;
        };
        recorder.entry(&entry);
        if !self.state.record_error_reported
            && let Some(error) = &recorder.error
        {
            self.state.record_error_reported = true;
            on_event(AgentEvent::Call(CallEvent::Warning(format!(
                "the agent's transcript is incomplete: {error}"
            ))));
        }
    }
}

fn is_read_only(planned: &Planned<'_>) -> bool {
    // A refused call runs nothing, so it may join a batch of reads.
    planned.tool.as_ref().map_or(true, |t| t.is_read_only())
}

/// Runs one call. Read tools do their file work synchronously, so they run
/// on the blocking pool: several at once, and a long search never holds up
/// the runtime (or the cancellation that drops it). A tool that panics is
/// an error result.
async fn run_call(
    workspace: Arc<Workspace>,
    tool: Result<Tool, ToolOutput>,
    arguments: Value,
) -> Ran {
    let started = Instant::now();
    let output = match tool {
        Err(refusal) => refusal,
        Ok(tool) if tool.is_read_only() => {
            let task = tokio::task::spawn_blocking(move || {
                tokio::runtime::Handle::current().block_on(tool.run(&workspace, &arguments))
            });
            task.await.unwrap_or_else(|e| {
                ToolOutput::error(format!("the {} tool failed: {e}", tool.name()))
            })
        }
        Ok(tool) => tool.run(&workspace, &arguments).await,
    };
    Ran {
        output,
        duration: started.elapsed(),
    }
}

/// Runs `work` until it finishes, the session is cancelled, or its deadline
/// passes — whichever comes first; the other two drop `work` at once (a
/// model stream is closed, a tool's child process is killed by its own
/// cancel handling).
async fn guard<T>(
    cancel: &Cancel,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    work: impl Future<Output = T>,
) -> Result<T, SessionError> {
    let expired = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        reason = cancel.cancelled() => Err(SessionError {
            kind: SessionErrorKind::Cancelled,
            message: format!("cancelled: {reason}"),
        }),
        () = expired => Err(SessionError::limit(format!(
            "reached the timeout ({})",
            crate::util::duration::setting(timeout.unwrap_or_default())
        ))),
        value = work => Ok(value),
    }
}

/// Streamed text, passed on in pieces of at most one per
/// [`TEXT_FLUSH_INTERVAL`] or [`TEXT_FLUSH_BYTES`].
struct TextBuffer {
    turn: u32,
    pending: String,
    last: Instant,
}

impl TextBuffer {
    fn new(turn: u32) -> TextBuffer {
        TextBuffer {
            turn,
            pending: String::new(),
            last: Instant::now(),
        }
    }

    fn push(&mut self, text: &str, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        self.push_at(text, Instant::now(), on_event);
    }

    fn push_at(&mut self, text: &str, now: Instant, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        self.pending.push_str(text);
        if self.pending.len() >= TEXT_FLUSH_BYTES
            || now.saturating_duration_since(self.last) >= TEXT_FLUSH_INTERVAL
        {
            self.flush_at(now, on_event);
        }
    }

    fn flush(&mut self, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        self.flush_at(Instant::now(), on_event);
    }

    fn flush_at(&mut self, now: Instant, on_event: &mut (dyn FnMut(AgentEvent) + Send)) {
        if !self.pending.is_empty() {
            on_event(AgentEvent::Text {
                turn: self.turn,
                text: std::mem::take(&mut self.pending),
            });
        }
        self.last = now;
    }
}

fn profile_name(profile: Profile) -> &'static str {
    match profile {
        Profile::Anthropic => "anthropic",
        Profile::OpenAi => "openai",
        Profile::Gemini => "gemini",
        Profile::OpenAiCompatible => "openai_compatible",
    }
}

fn finish_name(finish: &FinishReason) -> &str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::ToolUse => "tool_use",
        FinishReason::MaxTokens => "max_tokens",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(other) => other,
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(events: &[AgentEvent]) -> Vec<usize> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text { text, .. } => Some(text.len()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn streamed_text_is_passed_on_every_2_kb_or_100_ms() {
        let start = Instant::now();
        let mut buffer = TextBuffer::new(1);
        buffer.last = start;
        let mut events = Vec::new();
        let mut on_event = |e: AgentEvent| events.push(e);
        // 3,000 bytes at once in words of 10: one event at 2 KB, the rest held.
        for _ in 0..300 {
            buffer.push_at("word word ", start, &mut on_event);
        }
        // 100 ms later, the next word sends what waited.
        buffer.push_at("late ", start + TEXT_FLUSH_INTERVAL, &mut on_event);
        buffer.push_at("end", start + TEXT_FLUSH_INTERVAL, &mut on_event);
        buffer.flush_at(start + TEXT_FLUSH_INTERVAL, &mut on_event);
        buffer.flush_at(start + TEXT_FLUSH_INTERVAL, &mut on_event);
        assert_eq!(
            texts(&events),
            [2050, 955, 3],
            "nothing empty, nothing lost"
        );
    }
}
