//! A headless CLI agent's session, one child process per turn: the first
//! turn runs [`Flavor::command`], a further one (a repair of the reply)
//! resumes the program's own session with [`Flavor::resume_command`].
//!
//! Each process is started like an ACP agent ([`Interactive`]: a process
//! group of its own behind the start gate, watched by the reaper), its
//! stdin closed at once (codex and gemini read a non-TTY stdin into the
//! prompt; codex waits for its end), its stdout read a line at a time
//! through the flavor's parser into the same `agent.*` events and
//! `transcript.jsonl` as the other backends ([`Turn`]), its stderr logged.
//! A program silent for the stall timeout, or a cancelled run, has its
//! group stopped: SIGTERM, a grace, SIGKILL.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use super::{CliEvent, CliOutcome, Flavor, MAX_LINE_BYTES};
use crate::agent::child_io::{Lines, ReadError, STDERR_FILE, StderrTail, exit_hint, sleep_until};
use crate::agent::event::AgentEvent;
use crate::agent::record::Recorder;
use crate::agent::transcript::Entry;
use crate::agent::turn::Turn;
use crate::exec::cancel::Cancel;
use crate::exec::interactive::{Interactive, Program};
use crate::llm::Usage;

/// Once its stdout has closed, how long the program gets to exit before
/// its group is stopped.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// How a stage's CLI agent is run.
#[derive(Debug, Clone)]
pub struct CliConfig {
    pub flavor: Flavor,
    /// The program (its `program` is the path or name to run: `cli.command`
    /// or the flavor's; its `args` are replaced each turn), its work dir,
    /// environment and group record.
    pub program: Program,
    /// How the program is named in messages.
    pub name: String,
    /// The `--model`/`-m` to pass, if any.
    pub model: Option<String>,
    /// The program prints nothing for this long: it is taken to hang.
    pub stall_timeout: Duration,
    /// After SIGTERM (a cancel, a stall), how long before SIGKILL.
    pub cancel_grace: Duration,
    /// Where `transcript.jsonl` and the stderr logs go.
    pub record_dir: Option<PathBuf>,
}

/// Why a turn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliErrorKind {
    /// The program could not be started (not on PATH, not executable).
    Start,
    /// It reported a failure, or exited with a non-zero code.
    Failed,
    /// It ended without its final record (a crash, a kill).
    Exited,
    /// It printed nothing for the stall timeout.
    Stalled,
    /// It printed something else than its JSON lines, or flooded.
    Protocol,
    /// The run was cancelled.
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub kind: CliErrorKind,
    pub message: String,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// What one turn came to.
#[derive(Debug, Clone, PartialEq)]
pub struct CliReply {
    /// The reply, as the program's final record gave it.
    pub text: String,
    /// This turn's tokens.
    pub usage: Usage,
    /// This turn's US dollars, when the program priced it (claude).
    pub cost: Option<f64>,
    /// The model that answered, when the program said.
    pub model: Option<String>,
}

/// One stage's session with a CLI agent.
#[derive(Debug)]
pub struct CliAgent {
    config: CliConfig,
    recorder: Option<Recorder>,
    turns: u32,
    session_id: Option<String>,
    /// Paths the program said it changed, as it gave them.
    changed: BTreeSet<String>,
    /// Its file tools' calls not yet completed: call id → path.
    writing: HashMap<String, String>,
    /// The session's token total as codex last reported it: after
    /// `exec resume` its `turn.completed` counts the whole thread, so a
    /// turn's share is what it adds.
    codex_total: Usage,
}

impl CliAgent {
    #[must_use]
    pub fn new(config: CliConfig) -> CliAgent {
        let recorder = config.record_dir.as_deref().map(Recorder::open);
        CliAgent {
            config,
            recorder,
            turns: 0,
            session_id: None,
            changed: BTreeSet::new(),
            writing: HashMap::new(),
            codex_total: Usage::default(),
        }
    }

    /// Adds a line to the stage's transcript.
    pub fn record(&mut self, entry: &Entry) {
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.entry(entry);
        }
    }

    /// The program's session id, once it has said it.
    #[must_use]
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Paths the program reported changing (codex `file_change` items,
    /// claude's and gemini's file tools that succeeded), as it gave them:
    /// usually absolute.
    #[must_use]
    pub fn files_changed(&self) -> Vec<String> {
        self.changed.iter().cloned().collect()
    }

    /// Runs one turn: the first starts the session, a later one resumes
    /// it (when the program named its session; otherwise it starts a new
    /// one, which the caller may not want: see [`CliAgent::session_id`]).
    ///
    /// # Errors
    /// The program could not start, failed, crashed, hung, printed no JSON
    /// lines, or the run was cancelled; the message names the program.
    pub async fn prompt(
        &mut self,
        text: &str,
        cancel: &Cancel,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<CliReply, CliError> {
        self.turns += 1;
        self.record(&Entry::User {
            text: text.to_string(),
        });
        on_event(AgentEvent::TurnStarted { turn: self.turns });
        let mut turn = Turn::new(self.turns, None);
        let ran = self.run_process(text, cancel, &mut turn, on_event).await;
        let (usage, cost) = match &ran {
            Ok(outcome) => self.spend(outcome),
            Err(_) => (Usage::default(), None),
        };
        turn.finish(usage, cost, &mut self.recorder, on_event);
        on_event(AgentEvent::TurnCompleted {
            turn: self.turns,
            tool_calls: turn.tool_calls(),
            usage,
            duration: turn.elapsed(),
        });
        let outcome = ran?;
        on_event(AgentEvent::ModelCompleted {
            provider: "cli".to_string(),
            model: outcome
                .model
                .clone()
                .unwrap_or_else(|| self.config.name.clone()),
            usage,
            cost,
            finish: "end_turn".to_string(),
            duration: turn.elapsed(),
        });
        Ok(CliReply {
            text: outcome.text,
            usage,
            cost,
            model: outcome.model,
        })
    }

    /// A turn's tokens and cost from the final running total.
    fn spend(&mut self, outcome: &CliOutcome) -> (Usage, Option<f64>) {
        let total = outcome.usage;
        if self.config.flavor != Flavor::Codex {
            return (total, outcome.cost_usd);
        }
        let earlier = self.codex_total;
        self.codex_total = total;
        let grew = total.input >= earlier.input && total.output >= earlier.output;
        if !grew || earlier == Usage::default() {
            return (total, None);
        }
        let usage = Usage {
            input: total.input - earlier.input,
            output: total.output - earlier.output,
            reasoning: total.reasoning.saturating_sub(earlier.reasoning),
            cache_read: total.cache_read.saturating_sub(earlier.cache_read),
            cache_write: total.cache_write.saturating_sub(earlier.cache_write),
        };
        (usage, None)
    }

    /// Starts the program for `text`, reads it to its end and says how
    /// the turn ended.
    async fn run_process(
        &mut self,
        text: &str,
        cancel: &Cancel,
        turn: &mut Turn,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<CliOutcome, CliError> {
        let flavor = self.config.flavor;
        let name = self.config.name.clone();
        let model = self.config.model.as_deref();
        let (_, args) = match &self.session_id {
            Some(id) if self.turns > 1 => flavor.resume_command(id, text, model),
            _ => flavor.command(text, model),
        };
        // The program's own arguments (a profile's `cli_command`, say
        // `npx -y @google/gemini-cli`) come before Weft's.
        let mut program = self.config.program.clone();
        program.args.extend(args);
        let mut process = Interactive::spawn(&program).await.map_err(|e| CliError {
            kind: CliErrorKind::Start,
            message: format!("cannot start {name}: {e}; {}", flavor.install_hint()),
        })?;
        // End of input at once (after the start gate's line).
        drop(process.stdin.take());
        let (Some(stdout), Some(stderr)) = (process.stdout.take(), process.stderr.take()) else {
            let _ = process.stop(Duration::ZERO).await;
            return Err(CliError {
                kind: CliErrorKind::Start,
                message: format!("{name} started without its pipes"),
            });
        };
        let log = match self.turns {
            1 => STDERR_FILE.to_string(),
            n => format!("agent-stderr.{n}.log"),
        };
        let stderr =
            StderrTail::collect(stderr, self.config.record_dir.as_ref().map(|d| d.join(log)));
        let mut lines = Lines::new(stdout, MAX_LINE_BYTES);
        let mut parser = flavor.parser();
        let mut read = 0u32;
        let mut last_garbage = String::new();
        let stall = self.config.stall_timeout;
        let grace = self.config.cancel_grace;
        loop {
            let text_due = turn.text_due().map(tokio::time::Instant::from_std);
            let next = tokio::select! {
                () = sleep_until(text_due), if text_due.is_some() => {
                    turn.flush(on_event);
                    continue;
                }
                next = tokio::time::timeout(stall, lines.next()) => next,
                reason = cancel.cancelled() => {
                    let status = process.stop(grace).await;
                    return Err(CliError {
                        kind: CliErrorKind::Cancelled,
                        message: format!(
                            "cancelled ({reason:?}); {name} was stopped{}",
                            exit_hint(status)
                        ),
                    });
                }
            };
            let line = match next {
                Err(_) => {
                    let _ = process.stop(grace).await;
                    return Err(CliError {
                        kind: CliErrorKind::Stalled,
                        message: format!(
                            "{name} printed nothing for {}; it was stopped (raise the node's `cli.stall_timeout` if it works silently that long){}",
                            humantime::format_duration(stall),
                            stderr.hint()
                        ),
                    });
                }
                Ok(Err(ReadError::Closed | ReadError::Io(_))) => break,
                Ok(Err(ReadError::TooLong)) => {
                    let _ = process.stop(grace).await;
                    return Err(CliError {
                        kind: CliErrorKind::Protocol,
                        message: format!(
                            "{name} printed a line longer than {} MiB on stdout; it was stopped",
                            MAX_LINE_BYTES / (1024 * 1024)
                        ),
                    });
                }
                Ok(Ok(line)) => line,
            };
            read = read.saturating_add(1);
            for event in parser.line(&String::from_utf8_lossy(&line)) {
                if let Err(why) = self.apply(event, turn, &mut last_garbage, on_event) {
                    let _ = process.stop(grace).await;
                    return Err(CliError {
                        kind: CliErrorKind::Protocol,
                        message: format!("{name} was stopped: {why}"),
                    });
                }
            }
        }
        // Stdout closed: the program is ending. Whatever it left running
        // in its group goes with it.
        let exited = tokio::select! {
            waited = tokio::time::timeout(EXIT_WAIT, process.wait()) => waited.is_ok(),
            _ = cancel.cancelled() => false,
        };
        let status = process
            .stop(if exited { Duration::ZERO } else { grace })
            .await;
        if !exited && let Some(reason) = cancel.reason() {
            return Err(CliError {
                kind: CliErrorKind::Cancelled,
                message: format!(
                    "cancelled ({reason:?}) as {name} ended; it was stopped{}",
                    exit_hint(status)
                ),
            });
        }
        let outcome = parser.finish();
        judge(&name, flavor, outcome, status, read, &last_garbage, &stderr)
    }

    fn changed(&mut self, paths: Vec<String>) {
        if self.changed.len() < MAX_CHANGED_PATHS {
            self.changed.extend(paths);
        }
    }

    /// One parsed event into the turn. `Err` when the program floods.
    fn apply(
        &mut self,
        event: CliEvent,
        turn: &mut Turn,
        last_garbage: &mut String,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<(), String> {
        match event {
            CliEvent::Started { session_id, .. } => {
                if !session_id.is_empty() {
                    self.session_id = Some(session_id);
                }
            }
            CliEvent::Text(text) => {
                // claude and codex report whole messages (or blocks of one):
                // kept apart; gemini streams pieces of one.
                if self.config.flavor != Flavor::Gemini && !turn.text.is_empty() {
                    turn.message("\n\n", on_event)?;
                }
                turn.message(&text, on_event)?;
            }
            CliEvent::Thinking(text) => turn.thought(&text)?,
            CliEvent::ToolStarted {
                call_id,
                tool,
                summary,
                arguments,
            } => {
                let writes = self.config.flavor.written_path(&tool, &arguments);
                turn.tool_started(&call_id, summary, tool, arguments, true, on_event)?;
                if let Some(path) = writes
                    && self.writing.len() < MAX_CHANGED_PATHS
                {
                    self.writing.insert(call_id, path);
                }
            }
            CliEvent::ToolCompleted {
                call_id,
                is_error,
                output,
            } => {
                if let Some(path) = self.writing.remove(&call_id)
                    && !is_error
                {
                    self.changed(vec![path]);
                }
                turn.tool_finished(&call_id, is_error, &output, &mut self.recorder, on_event);
            }
            CliEvent::FilesChanged(paths) => self.changed(paths),
            // Kept by the parser for the outcome (the final total, the last
            // error).
            CliEvent::Usage { .. } | CliEvent::Error(_) => {}
            CliEvent::Garbage(line) => *last_garbage = line,
        }
        Ok(())
    }
}

/// Paths reported changed that are kept, at most.
const MAX_CHANGED_PATHS: usize = 100_000;

/// How a turn ended, from the stream, the exit status and the stderr.
fn judge(
    name: &str,
    flavor: Flavor,
    outcome: CliOutcome,
    status: Option<ExitStatus>,
    lines: u32,
    last_garbage: &str,
    stderr: &StderrTail,
) -> Result<CliOutcome, CliError> {
    let failed_exit = status.is_some_and(|s| !s.success());
    // A clean exit is not worth saying.
    let exit = if failed_exit {
        exit_hint(status)
    } else {
        String::new()
    };
    if lines > 0 && outcome.garbage_lines >= lines {
        return Err(CliError {
            kind: CliErrorKind::Protocol,
            message: format!(
                "{name} printed no JSON lines on stdout ({lines} lines of something else, the last: {last_garbage:?}){exit}: is it the {} CLI, and recent enough for its JSON output?{}",
                flavor.program(),
                stderr.hint()
            ),
        });
    }
    if !outcome.completed {
        let why = outcome
            .error
            .clone()
            .unwrap_or_else(|| format!("{} ended without a result", flavor.program()));
        let what = if lines == 0 {
            format!("{name} exited without any output{exit}")
        } else {
            format!("{name} stopped short: {why}{exit}")
        };
        return Err(CliError {
            kind: CliErrorKind::Exited,
            message: format!("{what}{}", stderr.hint()),
        });
    }
    if outcome.is_error || failed_exit {
        let why = outcome
            .error
            .clone()
            .unwrap_or_else(|| "it exited with an error".to_string());
        return Err(CliError {
            kind: CliErrorKind::Failed,
            message: format!("{name} failed: {why}{exit}{}", stderr.hint()),
        });
    }
    Ok(outcome)
}
