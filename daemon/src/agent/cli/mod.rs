//! External coding agents run as headless command-line programs
//! (`backend="cli"`): `claude -p`, `codex exec` and `gemini -p`, each asked
//! for its JSON-lines output. This module builds the invocation and turns
//! the program's stdout, one line at a time, into [`CliEvent`]s and, at the
//! end, a [`CliOutcome`].
//!
//! [`run`] runs one turn of a program as a child process and reports what
//! it does as agent events and transcript lines, as the ACP backend does.
//!
//! One file per program ([`claude`], [`codex`], [`gemini`]) knows its
//! record types; all three tolerate records and fields they do not know,
//! since every vendor adds some in patch releases.

mod claude;
mod codex;
mod gemini;
pub mod run;

pub use run::{CliAgent, CliConfig, CliError, CliErrorKind, CliReply};

use serde_json::Value;

use crate::llm::Usage;

/// A stdout line longer than this is not parsed (it is reported as
/// [`CliEvent::Garbage`]): no record of these programs comes near it, and
/// the engine caps what it reads anyway.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// A tool call's output kept in [`CliEvent::ToolCompleted`].
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// The reply kept in [`CliOutcome::text`].
pub const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// A line of garbage, a summary or an error message kept in an event.
const MAX_NOTE_BYTES: usize = 2 * 1024;
/// The one-line summary of a tool call.
const MAX_SUMMARY_BYTES: usize = 200;

/// Which program a `backend="cli"` stage runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Claude,
    Codex,
    Gemini,
}

impl Flavor {
    /// The flavor named `claude`, `codex` or `gemini`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Flavor> {
        match name {
            "claude" => Some(Flavor::Claude),
            "codex" => Some(Flavor::Codex),
            "gemini" => Some(Flavor::Gemini),
            _ => None,
        }
    }

    /// The program's usual name on PATH.
    #[must_use]
    pub fn program(self) -> &'static str {
        match self {
            Flavor::Claude => "claude",
            Flavor::Codex => "codex",
            Flavor::Gemini => "gemini",
        }
    }

    /// The headless invocation: the program and its arguments. The stage's
    /// work dir is the child's cwd (none of the three needs a flag for it:
    /// claude and gemini have none, codex's `-C` defaults to the cwd) and
    /// its stdin must be null (codex and gemini read a non-TTY stdin and
    /// add it to the prompt; codex waits for its end).
    ///
    /// - claude: `-p` (print mode, no TUI), `--output-format stream-json`
    ///   (JSON lines as it works rather than one object at the end),
    ///   `--verbose` (stream-json in print mode refuses to run without it),
    ///   `--permission-mode bypassPermissions` (print mode denies any tool
    ///   needing approval; the stage runs unattended in its own work dir),
    ///   `--model` when given, then the prompt as the positional argument
    ///   (after `--` when it starts with `-`, so it is not read as a flag).
    /// - codex: `exec` (the non-interactive subcommand), `--json` (JSON
    ///   lines on stdout, everything else on stderr), `--skip-git-repo-check`
    ///   (exec refuses to run outside a git repo without it, and a work dir
    ///   need not be one), `--sandbox workspace-write` (may edit its cwd;
    ///   exec never asks for approvals, so this is what lets it write;
    ///   `--full-auto` is gone from current releases), `-m` when given, then
    ///   `--` and the prompt last. Note that `-p` is codex's `--profile`.
    /// - gemini: `-p <prompt>` (headless; a bare positional prompt means
    ///   interactive in a TTY), `-o stream-json` (JSON lines; `-o json` is
    ///   one pretty-printed object at the end), `--yolo` (approve every
    ///   tool; headless denies those that would ask), `-m` when given. An
    ///   untrusted folder silently turns `--yolo` back into the default
    ///   mode, so the child also needs [`Flavor::env`].
    #[must_use]
    pub fn command(self, prompt: &str, model: Option<&str>) -> (String, Vec<String>) {
        let mut args: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
        match self {
            Flavor::Claude => {
                push(&[
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--permission-mode",
                    "bypassPermissions",
                ]);
                if let Some(model) = model {
                    push(&["--model", model]);
                }
                if prompt.starts_with('-') {
                    push(&["--"]);
                }
                push(&[prompt]);
            }
            Flavor::Codex => {
                push(&[
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--sandbox",
                    "workspace-write",
                ]);
                if let Some(model) = model {
                    push(&["-m", model]);
                }
                push(&["--", prompt]);
            }
            Flavor::Gemini => {
                // `--prompt=<text>` keeps a prompt starting with `-` from
                // being read as a flag.
                if prompt.starts_with('-') {
                    args.push(format!("--prompt={prompt}"));
                } else {
                    args.push("-p".to_owned());
                    args.push(prompt.to_owned());
                }
                let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
                push(&["-o", "stream-json", "--yolo"]);
                if let Some(model) = model {
                    push(&["-m", model]);
                }
            }
        }
        (self.program().to_owned(), args)
    }

    /// The invocation of a further turn in the session `session_id` (a
    /// repair of the reply): [`Flavor::command`]'s, resuming it.
    /// - claude: `--resume <id>` after the fixed flags;
    /// - codex: the `resume <id>` subcommand of `exec`, after `exec`'s own
    ///   flags (`exec resume [flags] <id> <prompt>` takes fewer of them);
    /// - gemini: `--resume <id>` (it also takes `latest`, never used: two
    ///   stages may share a work dir).
    #[must_use]
    pub fn resume_command(
        self,
        session_id: &str,
        prompt: &str,
        model: Option<&str>,
    ) -> (String, Vec<String>) {
        let (program, mut args) = self.command(prompt, model);
        let resume = |flag: &str| [flag.to_owned(), session_id.to_owned()];
        match self {
            // After `-p … bypassPermissions`, before `--model` and the prompt.
            Flavor::Claude => {
                args.splice(6..6, resume("--resume"));
            }
            // Before `-- <prompt>`.
            Flavor::Codex => {
                let at = args.len().saturating_sub(2);
                args.splice(at..at, resume("resume"));
            }
            Flavor::Gemini => args.extend(resume("--resume")),
        }
        (program, args)
    }

    /// What to do when the program cannot be started.
    #[must_use]
    pub fn install_hint(self) -> &'static str {
        match self {
            Flavor::Claude => {
                "install Claude Code (npm i -g @anthropic-ai/claude-code) or set the node's `cli.command` to its path"
            }
            Flavor::Codex => {
                "install Codex (npm i -g @openai/codex) or set the node's `cli.command` to its path"
            }
            Flavor::Gemini => {
                "install Gemini CLI (npm i -g @google/gemini-cli) or set the node's `cli.command` to its path"
            }
        }
    }

    /// Environment the child needs on top of the stage's (credentials are
    /// the engine's):
    /// - claude: no auto-updater, telemetry or error reporting from a
    ///   headless run;
    /// - gemini: trust the work dir, without which `--yolo` is silently
    ///   dropped for an untrusted folder (the `--skip-trust` flag does the
    ///   same but older releases reject it).
    #[must_use]
    pub fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Flavor::Claude => &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
            Flavor::Codex => &[],
            Flavor::Gemini => &[("GEMINI_CLI_TRUST_WORKSPACE", "true")],
        }
    }

    /// Variables to remove from the child's environment: a claude started
    /// from inside Claude Code (`CLAUDECODE` set) believes it is nested.
    #[must_use]
    pub fn env_remove(self) -> &'static [&'static str] {
        match self {
            Flavor::Claude => &["CLAUDECODE"],
            Flavor::Codex | Flavor::Gemini => &[],
        }
    }

    /// The file a tool call of this program writes, when it is one of its
    /// file-editing tools: claude `Write`, `Edit`, `MultiEdit` (`file_path`)
    /// and `NotebookEdit` (`notebook_path`), gemini `write_file` and
    /// `replace` (`file_path`). Codex reports its edits itself
    /// ([`CliEvent::FilesChanged`]); its shell commands, like everyone's,
    /// are not looked into.
    #[must_use]
    pub fn written_path(self, tool: &str, arguments: &Value) -> Option<String> {
        let key = match (self, tool) {
            (Flavor::Claude, "Write" | "Edit" | "MultiEdit")
            | (Flavor::Gemini, "write_file" | "replace") => "file_path",
            (Flavor::Claude, "NotebookEdit") => "notebook_path",
            _ => return None,
        };
        arguments
            .get(key)
            .and_then(Value::as_str)
            .filter(|path| !path.is_empty())
            .map(str::to_owned)
    }

    /// A parser for this program's stdout.
    #[must_use]
    pub fn parser(self) -> CliParser {
        CliParser::new(self)
    }
}

/// What one stdout line reported.
#[derive(Debug, Clone, PartialEq)]
pub enum CliEvent {
    /// The program's session began (claude `system/init`, codex
    /// `thread.started`, gemini `init`).
    Started {
        session_id: String,
        model: Option<String>,
    },
    /// Assistant text: a whole message (claude, codex) or a chunk of one
    /// (gemini streams deltas).
    Text(String),
    /// Reasoning the program chose to show.
    Thinking(String),
    ToolStarted {
        call_id: String,
        tool: String,
        /// One short line: the command, the path, the pattern.
        summary: String,
        arguments: Value,
    },
    ToolCompleted {
        call_id: String,
        is_error: bool,
        /// What the tool returned, at most [`MAX_OUTPUT_BYTES`].
        output: String,
    },
    /// Paths a codex `file_change` item changed, as the program gave them
    /// (usually absolute). Claude's and gemini's file tools are
    /// [`CliEvent::ToolStarted`] calls ([`Flavor::written_path`]).
    FilesChanged(Vec<String>),
    /// The run's tokens so far, a running total (not a delta): replace
    /// the previous one, do not add them up. `cost_usd` when the program
    /// prices it (claude's final result only).
    Usage { usage: Usage, cost_usd: Option<f64> },
    /// An error record that does not end the run (codex retry notices and
    /// `error` items, gemini warnings, claude API errors it will report in
    /// its result).
    Error(String),
    /// A line that is not JSON (or too long to parse), cut to a couple of
    /// KB. Blank lines are skipped; JSON records of unknown types are
    /// skipped silently.
    Garbage(String),
}

/// How the run ended, from everything the stream said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CliOutcome {
    /// The reply: claude's `result`, codex's last `agent_message`, gemini's
    /// assistant text after its last tool call (all of it when there was
    /// none). When the run failed or stopped short: the last assistant
    /// text seen, possibly empty. At most [`MAX_REPLY_BYTES`].
    pub text: String,
    /// The run failed: by its own final record, or it ended without one.
    pub is_error: bool,
    /// Why, when `is_error`.
    pub error: Option<String>,
    /// Whether the stream's final record (claude `result`, codex
    /// `turn.completed`/`turn.failed`, gemini `result`) was seen.
    pub completed: bool,
    pub usage: Usage,
    /// US dollars, as the program priced it (claude only).
    pub cost_usd: Option<f64>,
    /// For resuming: claude `session_id`, codex `thread_id`, gemini
    /// `session_id`.
    pub session_id: Option<String>,
    pub model: Option<String>,
    /// Model turns, when the program says (claude `num_turns`, codex
    /// `turn.started` records).
    pub turns: Option<u32>,
    /// Lines that were not JSON.
    pub garbage_lines: u32,
}

/// What every flavor's parser gathers for the outcome.
#[derive(Debug, Default)]
struct Summary {
    session_id: Option<String>,
    model: Option<String>,
    /// Set from the final record (or the last message) when there is one.
    reply: Option<String>,
    completed: bool,
    is_error: bool,
    error: Option<String>,
    /// The last non-fatal error, to explain a stream that stopped short.
    last_error: Option<String>,
    usage: Usage,
    cost_usd: Option<f64>,
    turns: Option<u32>,
    garbage_lines: u32,
}

#[derive(Debug)]
enum State {
    Claude(claude::State),
    Codex(codex::State),
    Gemini(gemini::State),
}

/// Reads one program's stdout, line by line.
#[derive(Debug)]
pub struct CliParser {
    flavor: Flavor,
    state: State,
    summary: Summary,
}

impl CliParser {
    #[must_use]
    pub fn new(flavor: Flavor) -> CliParser {
        let state = match flavor {
            Flavor::Claude => State::Claude(claude::State::default()),
            Flavor::Codex => State::Codex(codex::State::default()),
            Flavor::Gemini => State::Gemini(gemini::State::default()),
        };
        CliParser {
            flavor,
            state,
            summary: Summary::default(),
        }
    }

    #[must_use]
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// One line of stdout (with or without its line ending). Never panics:
    /// a line that is not JSON becomes [`CliEvent::Garbage`], a record of
    /// an unknown type or with unexpected fields yields what it can.
    pub fn line(&mut self, line: &str) -> Vec<CliEvent> {
        let line = line.trim();
        if line.is_empty() {
            return Vec::new();
        }
        if line.len() > MAX_LINE_BYTES {
            self.summary.garbage_lines = self.summary.garbage_lines.saturating_add(1);
            return vec![CliEvent::Garbage(format!(
                "{} [a line of {} bytes, not parsed]",
                clip(line, MAX_NOTE_BYTES),
                line.len()
            ))];
        }
        let record = match serde_json::from_str::<Value>(line) {
            Ok(record @ Value::Object(_)) => record,
            _ => {
                self.summary.garbage_lines = self.summary.garbage_lines.saturating_add(1);
                return vec![CliEvent::Garbage(clip(line, MAX_NOTE_BYTES))];
            }
        };
        let mut events = Vec::new();
        match &mut self.state {
            State::Claude(state) => state.record(&record, &mut self.summary, &mut events),
            State::Codex(state) => state.record(&record, &mut self.summary, &mut events),
            State::Gemini(state) => state.record(&record, &mut self.summary, &mut events),
        }
        events
    }

    /// The outcome once stdout has ended. A stream without its final record
    /// is an error ("… ended without a result"), whatever the exit code.
    #[must_use]
    pub fn finish(self) -> CliOutcome {
        let CliParser {
            flavor,
            state,
            mut summary,
        } = self;
        let fallback = match state {
            State::Claude(state) => state.fallback_reply(&mut summary),
            State::Codex(state) => state.fallback_reply(),
            State::Gemini(state) => state.fallback_reply(),
        };
        if !summary.completed {
            summary.is_error = true;
            let mut message = format!("{} ended without a result", flavor.program());
            if let Some(last) = &summary.last_error {
                message.push_str(&format!(" (last error: {last})"));
            }
            summary.error = Some(message);
        } else if summary.is_error && summary.error.is_none() {
            summary.error = Some(
                summary
                    .last_error
                    .clone()
                    .unwrap_or_else(|| format!("{} reported an error", flavor.program())),
            );
        }
        CliOutcome {
            text: clip(&summary.reply.unwrap_or(fallback), MAX_REPLY_BYTES),
            is_error: summary.is_error,
            error: summary.error,
            completed: summary.completed,
            usage: summary.usage,
            cost_usd: summary.cost_usd,
            session_id: summary.session_id,
            model: summary.model,
            turns: summary.turns,
            garbage_lines: summary.garbage_lines,
        }
    }
}

/// `s` cut to at most `max` bytes on a char boundary, saying how much went.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} bytes cut]", &s[..end], s.len() - end)
}

/// The string at `key`, or empty.
fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The non-negative integer at `key`, or 0.
fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or_default()
}

/// A one-line summary of a tool call from its arguments: the command, the
/// path, the pattern or the query, else the tool's name.
fn summarise(tool: &str, arguments: &Value) -> String {
    const KEYS: &[&str] = &[
        "command",
        "cmd",
        "file_path",
        "path",
        "absolute_path",
        "pattern",
        "query",
        "url",
        "description",
        "prompt",
    ];
    let found = KEYS.iter().find_map(|key| match arguments.get(*key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(Value::Array(parts)) if !parts.is_empty() => Some(
            parts
                .iter()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    });
    let line = found.unwrap_or_else(|| tool.to_owned());
    let first = line.lines().next().unwrap_or_default().trim();
    clip(first, MAX_SUMMARY_BYTES)
}

/// Text of a tool result's content: a string, or the text of its blocks.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ => b.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}
