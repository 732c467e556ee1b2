//! Live progress of a run on stderr: one line per finished stage with its
//! status and duration, and what is running now. Stdout stays free for
//! `--json`.
//!
//! On a terminal a live block at the bottom shows every running stage —
//! each branch of a fan-out gets its own line — with a spinner, its time so
//! far and the last line its command wrote, redrawn in place ten times a
//! second. Without a terminal (CI logs, pipes) nothing is redrawn: a stage
//! running longer than [`HEARTBEAT`] gets one line with its latest output,
//! and another after each further [`HEARTBEAT`].
//!
//! The output shown comes from the stage folder's `stdout.log` and
//! `stderr.log`, not from `command.output` events: the engine caps how many
//! events a huge output produces, while the files always have the end.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::report::{Style, count, status_colour};
use crate::engine::interviewer::{Question, parse_accelerator};
use crate::engine::recorder::Observer;
use crate::model::Status;
use crate::model::{Event, EventKind};
use crate::store::RunDir;
use crate::util::duration::elapsed;
use crate::util::text::truncate;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// How often a terminal's live block is redrawn.
const TTY_TICK: Duration = Duration::from_millis(100);

/// How often, without a terminal, running stages are checked for a
/// [`HEARTBEAT`] line.
const PLAIN_TICK: Duration = Duration::from_secs(1);

/// Without a terminal, a stage that has run this long gets a line with its
/// latest output, and another each time this much more has passed: often
/// enough to show a CI log is alive, rarely enough not to flood it.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(30);

/// At most this many running stages get a line of their own in the live
/// block; the rest are counted on one more line.
const MAX_LIVE_LINES: usize = 6;

/// How much of the end of an output file is read to find its last line.
const TAIL_BYTES: u64 = 4096;

/// The longest output line shown without a terminal (a terminal cuts lines
/// at its width so that the live block never wraps).
const PLAIN_TAIL_CHARS: usize = 120;

/// The width assumed when the terminal's cannot be read.
const DEFAULT_WIDTH: usize = 80;

/// At most this many lines of a gate's context (the previous stage's
/// output) are shown to a person reading a log.
const CONTEXT_LINES: usize = 20;

/// Who answers the run's human gates; it decides what a gate shows here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gates {
    /// A console on this terminal asks (and prints the question itself).
    Here,
    /// `--auto-approve` or `--dry-run`: gates answer themselves.
    Auto,
    /// Another client answers (`weft answer`, the app): say how.
    Elsewhere,
}

/// A stage that has started and not finished.
#[derive(Debug)]
struct Running {
    node: String,
    visit: u32,
    /// `node`, or `node@visit` from the second visit on.
    name: String,
    branch: Option<String>,
    /// Only commands write output files worth following.
    command: bool,
    since: Instant,
    /// When the last heartbeat line was printed (or the stage started).
    heartbeat: Instant,
    /// The last non-empty line of its output, cleaned for one line.
    tail: Option<String>,
    /// Length and modification time of stdout.log and stderr.log when the
    /// tail was last read: unchanged files are not read again.
    seen: [(u64, Option<SystemTime>); 2],
    /// An agent's tool calls in flight (call id, `→ tool summary`), oldest
    /// first; the newest is its tail.
    calls: Vec<(String, String)>,
}

/// Tool calls in flight remembered per agent stage (an agent runs its
/// read-only calls of a turn at once).
const MAX_CALLS_SHOWN: usize = 16;

struct State {
    out: Box<dyn Write + Send>,
    tty: bool,
    style: Style,
    /// The terminal's width, or `None` to ask the terminal on stderr.
    width: Option<usize>,
    gates: Gates,
    run_dir: Option<RunDir>,
    /// In start order.
    running: Vec<Running>,
    frame: usize,
    /// How many lines of the live block are on screen.
    live: usize,
    /// A question is being asked on this terminal: draw nothing.
    paused: bool,
    /// A console printed a prompt and no newline has ended that line yet.
    prompt_open: bool,
    /// Questions asked and not yet settled, by id.
    open_questions: Vec<String>,
    run_id: String,
}

/// The progress display.
#[derive(Clone)]
pub(crate) struct Progress {
    state: Arc<Mutex<State>>,
    tty: bool,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("tty", &self.tty).finish()
    }
}

impl Progress {
    /// Progress on stderr, redrawn in place and coloured (unless `NO_COLOR`)
    /// when stderr is a terminal.
    #[must_use]
    pub fn stderr(gates: Gates) -> Progress {
        let tty = std::io::stderr().is_terminal();
        Progress::new(Box::new(std::io::stderr()), tty, Style::when(tty), gates)
    }

    /// Progress written to `out`; `tty` chooses the live block over
    /// heartbeat lines.
    #[must_use]
    pub fn new(out: Box<dyn Write + Send>, tty: bool, style: Style, gates: Gates) -> Progress {
        let state = State {
            out,
            tty,
            style,
            width: None,
            gates,
            run_dir: None,
            running: Vec::new(),
            frame: 0,
            live: 0,
            paused: false,
            prompt_open: false,
            open_questions: Vec::new(),
            run_id: String::new(),
        };
        Progress {
            state: Arc::new(Mutex::new(state)),
            tty,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::util::lock::lock(&self.state)
    }

    /// The observer to hand to the engine (or to feed followed events to).
    #[must_use]
    pub fn observer(&self) -> Observer {
        let me = self.clone();
        Arc::new(move |event: &Event| me.on_event(event, Instant::now()))
    }

    /// Calls [`Progress::tick`] ten times a second on a terminal, once a
    /// second otherwise.
    #[must_use]
    pub(crate) fn spawn_ticker(&self) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        let every = if self.tty { TTY_TICK } else { PLAIN_TICK };
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                me.tick(Instant::now());
            }
        })
    }

    /// Brings the display up to `now`: on a terminal, redraws the live
    /// block; otherwise prints the heartbeat lines that are due.
    pub fn tick(&self, now: Instant) {
        let mut state = self.lock();
        if state.tty {
            state.refresh_tails(false);
            state.draw(now);
        } else {
            state.heartbeats(now);
        }
    }

    /// Clears the live block.
    pub fn finish(&self) {
        self.lock().clear_live();
    }

    /// The console's prompt line was ended by the person's answer.
    pub(crate) fn prompt_closed(&self) {
        self.lock().prompt_open = false;
    }

    fn on_event(&self, event: &Event, now: Instant) {
        let mut state = self.lock();
        let stage = stage_name(event);
        let line = match &event.kind {
            EventKind::RunStarted {
                run_dir, resumed, ..
            } => {
                state.run_id.clone_from(&event.run_id);
                state.run_dir = Some(RunDir::open(run_dir));
                let verb = if *resumed { "resumed" } else { "started" };
                Some(format!("run {} {verb}\n  run dir: {run_dir}", event.run_id))
            }
            EventKind::StageStarted {
                attempt,
                branch,
                handler,
            } => {
                if let (1, Some(node), Some(visit)) = (*attempt, &event.node_id, event.visit) {
                    state
                        .running
                        .retain(|r| !(r.node == *node && r.visit == visit));
                    state.running.push(Running {
                        node: node.clone(),
                        visit,
                        name: stage,
                        branch: branch.clone(),
                        command: handler == "command",
                        since: now,
                        heartbeat: now,
                        tail: None,
                        seen: [(0, None); 2],
                        calls: Vec::new(),
                    });
                }
                None
            }
            EventKind::AgentToolStarted {
                call_id,
                tool,
                summary,
                ..
            } => {
                if let Some(running) = state.running_mut(event) {
                    if running.calls.len() >= MAX_CALLS_SHOWN {
                        running.calls.remove(0);
                    }
                    running
                        .calls
                        .push((call_id.clone(), clean_line(&format!("→ {tool} {summary}"))));
                    running.tail = running.calls.last().map(|(_, text)| text.clone());
                }
                None
            }
            EventKind::AgentToolCompleted { call_id, .. } => {
                if let Some(running) = state.running_mut(event) {
                    running.calls.retain(|(id, _)| id != call_id);
                    running.tail = running.calls.last().map(|(_, text)| text.clone());
                }
                None
            }
            EventKind::StageRetrying {
                attempt,
                delay_ms,
                reason,
            } => Some(format!(
                "  {} {stage} attempt {attempt} failed ({reason}); retrying in {}",
                state.style.paint("33", "↻"),
                elapsed(Duration::from_millis(*delay_ms))
            )),
            EventKind::StageCompleted {
                status,
                duration_ms,
                attempts,
                ..
            }
            | EventKind::StageFailed {
                status,
                duration_ms,
                attempts,
                ..
            } => {
                let finished = state.take_running(event);
                let failed = matches!(event.kind, EventKind::StageFailed { .. });
                let mark = match status {
                    _ if failed => "✗",
                    Status::Succeeded => "✓",
                    Status::PartiallySucceeded => "◐",
                    Status::Skipped => "–",
                    Status::Failed => "✗",
                };
                let status_text = if failed { "failed" } else { status.as_str() };
                let colour = status_colour(status_text);
                let tries = if *attempts > 1 {
                    format!(" after {attempts} attempts")
                } else {
                    String::new()
                };
                let reason = match &event.kind {
                    EventKind::StageFailed { outcome, .. } => outcome
                        .failure_reason()
                        .map(|r| format!("  {r}"))
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                let branch = finished
                    .and_then(|r| r.branch.filter(|b| *b != r.node))
                    .map(|b| format!(" (branch {b})"))
                    .unwrap_or_default();
                Some(format!(
                    "  {} {stage:<24} {} {:>7}{tries}{branch}{reason}",
                    state.style.paint(colour, mark),
                    state.style.paint(colour, &format!("{status_text:<20}")),
                    elapsed(Duration::from_millis(*duration_ms))
                ))
            }
            EventKind::ParallelStarted { branches, .. } => Some(format!(
                "  ⑂ {stage}: {} ({})",
                count(branches.len() as u64, "branch", "branches"),
                branches.join(", ")
            )),
            EventKind::InterviewStarted { question_id, .. } => {
                state.open_questions.push(question_id.clone());
                match state.gates {
                    Gates::Here => {
                        state.clear_live();
                        state.paused = true;
                        state.prompt_open = true;
                        None
                    }
                    Gates::Auto => None,
                    Gates::Elsewhere => question_of(event).map(|question| {
                        let several = state.open_questions.len() > 1;
                        waiting_lines(&event.run_id, &question, several)
                    }),
                }
            }
            EventKind::InterviewCompleted {
                question_id,
                selected,
                text,
            } => {
                let elsewhere = state.settle_question(question_id);
                let answer = text.as_deref().unwrap_or(selected);
                match (elsewhere, state.gates) {
                    (true, _) => Some(format!("  ↳ {stage}: answered elsewhere: {answer}")),
                    (false, Gates::Auto) => Some(format!("  ↳ {stage}: auto-approved: {answer}")),
                    (false, Gates::Elsewhere) => Some(format!("  ↳ {stage}: answered: {answer}")),
                    (false, Gates::Here) => None,
                }
            }
            EventKind::InterviewInterrupted {
                question_id,
                reason,
            } => {
                let elsewhere = state.settle_question(question_id);
                (elsewhere || state.gates != Gates::Here)
                    .then(|| format!("  ↳ {stage}: not answered: {reason}"))
            }
            EventKind::InterviewTimeout {
                question_id,
                default_choice,
            } => {
                state.settle_question(question_id);
                Some(match default_choice {
                    Some(d) => format!("  ⏱ {stage}: no answer in time; taking the default `{d}`"),
                    None => format!("  ⏱ {stage}: no answer in time"),
                })
            }
            EventKind::LoopRestart { to_node, .. } => Some(format!(
                "  ⟲ loop restart: continuing at {to_node} with a fresh context"
            )),
            EventKind::WatchdogTimeout { idle_secs } => Some(format!(
                "  ! no activity for {idle_secs}s: the stall watchdog stops the run"
            )),
            EventKind::RunNotice { message } => Some(format!("  note: {message}")),
            EventKind::SandboxReady {
                container,
                image,
                attach,
                ..
            } if attach != "running" => Some(format!(
                "  ▣ {stage}: container {container} ({image}) {attach}"
            )),
            EventKind::SandboxKept { engine, container } => Some(format!(
                "  ▣ container {container} kept: DOCKER_HOST={engine} docker exec -it {container} sh"
            )),
            EventKind::BudgetWarning { message, .. } => Some(format!("  ! {message}")),
            EventKind::EnvWithheld { names } => Some(withheld_line(names)),
            EventKind::RunCompleted {
                duration_ms,
                failed_stages,
                exit_node,
            } => Some(format!(
                "run {} succeeded{}{} in {}",
                event.run_id,
                failed_note(failed_stages)
                    .map(|note| format!(", {note},"))
                    .unwrap_or_default(),
                // Which exit matters only when there was a choice.
                exit_node
                    .as_deref()
                    .filter(|_| state.run_dir.as_ref().is_some_and(several_exits))
                    .map(|exit| format!(", ended at `{exit}`,"))
                    .unwrap_or_default(),
                elapsed(Duration::from_millis(*duration_ms))
            )),
            EventKind::RunFailed {
                reason,
                duration_ms,
            } => Some(format!(
                "run {} failed after {}: {reason}\n  inspect: weft events {} · weft logs {}",
                event.run_id,
                elapsed(Duration::from_millis(*duration_ms)),
                event.run_id,
                event.run_id
            )),
            EventKind::RunInterrupted {
                reason,
                duration_ms,
            } => Some(format!(
                "run {} interrupted after {}: {reason}\n  {}",
                event.run_id,
                elapsed(Duration::from_millis(*duration_ms)),
                // A resume that could not start will not start by itself
                // either; a run the daemon's stop interrupted will.
                if reason.starts_with("resume could not start") {
                    format!("once that is fixed: weft resume {}", event.run_id)
                } else {
                    format!(
                        "it resumes when weftd starts again, or now with: weft resume {}",
                        event.run_id
                    )
                }
            )),
            EventKind::RunCancelled {
                reason,
                duration_ms,
            } => Some(format!(
                "run {} cancelled after {}: {reason}\n  continue it with: weft resume {}",
                event.run_id,
                elapsed(Duration::from_millis(*duration_ms)),
                event.run_id
            )),
            _ => None,
        };
        if matches!(
            event.kind,
            EventKind::RunCompleted { .. }
                | EventKind::RunFailed { .. }
                | EventKind::RunCancelled { .. }
                | EventKind::RunInterrupted { .. }
        ) {
            state.running.clear();
        }
        if let Some(line) = line {
            state.say(&line, now);
        }
    }
}

/// Whether the workflow a run directory holds (`graph.fabro`, as it was
/// submitted) has more than one exit node. Best effort: a file that cannot
/// be read or parsed says no.
fn several_exits(run_dir: &RunDir) -> bool {
    crate::limits::read_text_capped(
        &run_dir.path().join("graph.fabro"),
        crate::limits::MAX_WORKFLOW_BYTES,
    )
    .ok()
    .and_then(|text| crate::lang::parser::parse(&text).ok())
    .is_some_and(|parsed| parsed.graph.exit_nodes().len() > 1)
}

impl State {
    /// Prints `line` above the live block (which is redrawn below it).
    fn say(&mut self, line: &str, now: Instant) {
        self.clear_live();
        let _ = writeln!(self.out, "{line}");
        let _ = self.out.flush();
        self.draw(now);
    }

    /// Ends a question: the prompt line, if a console left one open, gets
    /// its newline first (so a notice never overwrites it). True when that
    /// prompt was still open, i.e. someone else answered.
    fn settle_question(&mut self, question_id: &str) -> bool {
        self.open_questions.retain(|q| q != question_id);
        let open = std::mem::take(&mut self.prompt_open);
        if open {
            let _ = writeln!(self.out);
        }
        self.paused = false;
        open
    }

    /// The running stage an event is about.
    fn running_mut(&mut self, event: &Event) -> Option<&mut Running> {
        self.running.iter_mut().find(|r| {
            event.node_id.as_deref() == Some(r.node.as_str()) && event.visit == Some(r.visit)
        })
    }

    /// Removes and returns the running stage an event finishes.
    fn take_running(&mut self, event: &Event) -> Option<Running> {
        let at = self.running.iter().position(|r| {
            event.node_id.as_deref() == Some(r.node.as_str()) && event.visit == Some(r.visit)
        })?;
        Some(self.running.remove(at))
    }

    fn clear_live(&mut self) {
        if self.live == 0 {
            return;
        }
        let mut erase = String::from("\r\x1b[2K");
        for _ in 1..self.live {
            erase.push_str("\x1b[1A\x1b[2K");
        }
        let _ = write!(self.out, "{erase}");
        let _ = self.out.flush();
        self.live = 0;
    }

    /// Redraws the live block: one line per running stage (terminals only).
    fn draw(&mut self, now: Instant) {
        if !self.tty || self.paused {
            return;
        }
        self.clear_live();
        if self.running.is_empty() {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let width = self
            .width
            .unwrap_or_else(terminal_width)
            .saturating_sub(1)
            .max(20);
        let name_width = self
            .running
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(0)
            .min(24);
        let mut lines = Vec::new();
        let spinner = self.style.paint("36", FRAMES[self.frame]);
        for running in self.running.iter().take(MAX_LIVE_LINES) {
            // The spinner in cyan, the name and time plain, the output dim;
            // widths are counted on the plain text.
            let so_far = elapsed(now.saturating_duration_since(running.since));
            let head = format!(
                " {:<name_width$} {so_far:>7}",
                truncate(&running.name, name_width)
            );
            let room = width.saturating_sub(head.chars().count() + 5);
            let mut line = format!("  {spinner}{head}");
            if let Some(tail) = running.tail.as_deref().filter(|_| room > 3) {
                line.push_str("  ");
                line.push_str(&self.style.paint("2", &truncate(tail, room)));
            }
            lines.push(line);
        }
        if self.running.len() > MAX_LIVE_LINES {
            lines.push(format!(
                "  … and {} more running",
                self.running.len() - MAX_LIVE_LINES
            ));
        }
        let _ = write!(self.out, "{}", lines.join("\n"));
        let _ = self.out.flush();
        self.live = lines.len();
    }

    /// Without a terminal: a line for each stage whose heartbeat is due.
    fn heartbeats(&mut self, now: Instant) {
        let due = self
            .running
            .iter()
            .any(|r| now.saturating_duration_since(r.heartbeat) >= HEARTBEAT);
        if !due {
            return;
        }
        self.refresh_tails(true);
        let mut lines = Vec::new();
        for running in &mut self.running {
            if now.saturating_duration_since(running.heartbeat) < HEARTBEAT {
                continue;
            }
            running.heartbeat = now;
            let so_far = elapsed(now.saturating_duration_since(running.since));
            lines.push(match &running.tail {
                Some(tail) => format!(
                    "  … {} still running ({so_far}): {}",
                    running.name,
                    truncate(tail, PLAIN_TAIL_CHARS)
                ),
                None => format!("  … {} still running ({so_far})", running.name),
            });
        }
        for line in lines {
            let _ = writeln!(self.out, "{line}");
        }
        let _ = self.out.flush();
    }

    /// Reads the last output line of each running command whose output
    /// files changed (`all`: of every running command).
    fn refresh_tails(&mut self, all: bool) {
        let Some(run_dir) = &self.run_dir else {
            return;
        };
        for running in self.running.iter_mut().filter(|r| r.command) {
            let folder = run_dir.node_dir(&running.node, running.visit);
            let files = [folder.join("stdout.log"), folder.join("stderr.log")];
            let seen = files.clone().map(|path| {
                std::fs::symlink_metadata(&path)
                    .ok()
                    .filter(std::fs::Metadata::is_file)
                    .map_or((0, None), |m| (m.len(), m.modified().ok()))
            });
            if seen == running.seen && !all {
                continue;
            }
            running.seen = seen;
            // The stream written to last; stdout when both are as new.
            let newest = (0..2)
                .filter(|&i| seen[i].0 > 0)
                .max_by_key(|&i| (seen[i].1, usize::from(i == 0)));
            if let Some(i) = newest
                && let Some(line) = last_line(&files[i])
            {
                running.tail = Some(line);
            }
        }
    }
}

/// The last non-empty line of the file at `path`, read from its final
/// [`TAIL_BYTES`] and cleaned for display on one line. Regular files only,
/// opened without blocking: a stage folder is ours, but a command could put
/// a FIFO there.
fn last_line(path: &Path) -> Option<String> {
    let bytes = crate::limits::read_tail(path, TAIL_BYTES).ok()?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .rev()
        .map(clean_line)
        .find(|line| !line.is_empty())
}

/// One output line as it would look on a terminal, on one line: what
/// follows the last carriage return (progress bars redraw that way),
/// without escape sequences or control characters, tabs as spaces.
fn clean_line(line: &str) -> String {
    let shown = line
        .split('\r')
        .rev()
        .find(|part| !part.trim().is_empty())
        .unwrap_or("");
    let mut out = String::with_capacity(shown.len());
    let mut chars = shown.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI (`ESC [ ... final`) or a two-character escape.
                if chars.next_if_eq(&'[').is_some() {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// The width of the terminal on stderr, or [`DEFAULT_WIDTH`].
fn terminal_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|&cols| cols > 0)
        .unwrap_or(DEFAULT_WIDTH)
}

/// The question an `interview.started` event asks.
#[must_use]
pub(crate) fn question_of(event: &Event) -> Option<Question> {
    let EventKind::InterviewStarted {
        question_id,
        question,
        options,
        freeform,
        context,
        timeout_ms,
        default_choice,
        // Its context already says the request in words.
        permission: _,
    } = &event.kind
    else {
        return None;
    };
    Some(Question {
        id: question_id.clone(),
        node_id: event.node_id.clone().unwrap_or_default(),
        text: question.clone(),
        context: context.clone(),
        choices: options
            .iter()
            .map(|label| {
                let (key, text) = parse_accelerator(label);
                crate::engine::interviewer::Choice {
                    key,
                    label: label.clone(),
                    text,
                    target: String::new(),
                }
            })
            .collect(),
        freeform: *freeform,
        timeout_ms: *timeout_ms,
        default_choice: default_choice.clone(),
    })
}

/// What a gate shows when nobody can answer it here: the end of the
/// previous stage's output, the question and its options, what happens
/// without an answer, and the command that answers it.
#[must_use]
pub(crate) fn waiting_lines(run_id: &str, question: &Question, several_open: bool) -> String {
    let mut out = String::new();
    if let Some(context) = question.context.as_deref().map(str::trim)
        && !context.is_empty()
    {
        let lines: Vec<&str> = context.lines().collect();
        let hidden = lines.len().saturating_sub(CONTEXT_LINES);
        if hidden > 0 {
            out.push_str(&format!(
                "  │ … ({} not shown)\n",
                count(hidden as u64, "earlier line", "earlier lines")
            ));
        }
        for line in &lines[hidden..] {
            out.push_str(&format!("  │ {line}\n"));
        }
    }
    let options: Vec<&str> = question.choices.iter().map(|c| c.label.as_str()).collect();
    let mut offered = options.join(" | ");
    if question.freeform {
        offered.push_str(if options.is_empty() {
            "any text"
        } else {
            " | any text"
        });
    }
    let wait = question
        .wait_note()
        .unwrap_or_else(|| "no timeout".to_string());
    out.push_str(&format!(
        "  ? {}: {}  ({offered}; {wait})\n",
        question.node_id, question.text
    ));
    let pick = if several_open {
        format!(" --question {}", question.id)
    } else {
        String::new()
    };
    let mut ways: Vec<String> = question
        .choices
        .iter()
        .map(|c| match &c.key {
            Some(key) if shell_safe(key) => format!("--key {key}"),
            _ => format!("--label {}", shell_quote(&c.text)),
        })
        .collect();
    if question.freeform {
        ways.push("--text 'your reply'".to_string());
    }
    let others = if ways.len() > 1 {
        format!("  (or {})", ways[1..].join(", "))
    } else {
        String::new()
    };
    out.push_str(&format!(
        "    answer with: weft answer {run_id}{pick} {}{others}",
        ways.first().map_or("", String::as_str)
    ));
    out
}

fn shell_safe(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,/@%+=:".contains(c))
}

/// `text` as one shell word: as it is when safe, else in single quotes.
fn shell_quote(text: &str) -> String {
    if shell_safe(text) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `1 stage failed (flaky)`, `2 stages failed (a, b)`: what a run that
/// succeeded routed past; `None` when no stage failed.
#[must_use]
pub(crate) fn failed_note(failed_stages: &[String]) -> Option<String> {
    match failed_stages.len() {
        0 => None,
        1 => Some(format!("1 stage failed ({})", failed_stages.join(", "))),
        n => Some(format!("{n} stages failed ({})", failed_stages.join(", "))),
    }
}

/// `node`, or `node@visit` from the second visit on.
fn stage_name(event: &Event) -> String {
    match (&event.node_id, event.visit) {
        (Some(node), Some(visit)) if visit > 1 => format!("{node}@{visit}"),
        (Some(node), _) => node.clone(),
        (None, _) => String::new(),
    }
}

/// The line naming the variables commands do not get (never their values).
fn withheld_line(names: &[String]) -> String {
    format!(
        "  withheld from commands: {} ([run.env] pass in run.toml gives them to steps)",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Outcome;

    /// A writer the test reads back after the display owns it.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("screen").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn take(&self) -> String {
            let bytes = std::mem::take(&mut *self.0.lock().expect("screen"));
            String::from_utf8(bytes).expect("utf-8")
        }
    }

    fn display(tty: bool, gates: Gates) -> (Progress, Screen) {
        let screen = Screen::default();
        let progress = Progress::new(Box::new(screen.clone()), tty, Style::when(false), gates);
        progress.lock().width = Some(60);
        (progress, screen)
    }

    fn event(node: Option<&str>, kind: EventKind) -> Event {
        Event {
            seq: 1,
            ts: "2026-12-02T12:34:56.789Z".into(),
            run_id: "R1".into(),
            node_id: node.map(str::to_string),
            visit: node.map(|_| 1),
            kind,
        }
    }

    fn started(node: &str, branch: Option<&str>) -> Event {
        event(
            Some(node),
            EventKind::StageStarted {
                handler: "command".into(),
                attempt: 1,
                branch: branch.map(str::to_string),
            },
        )
    }

    /// A run whose directory holds what `alpha` and `beta` wrote.
    fn run_with_output(progress: &Progress, at: Instant) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        let run_dir = RunDir::open(dir.path());
        for (node, file, text) in [
            ("alpha", "stdout.log", "building\ncompiling alpha-7\n\n"),
            (
                "beta",
                "stderr.log",
                "\x1b[31mtesting\x1b[0m 10%\rtesting 90%\n",
            ),
        ] {
            let folder = run_dir.node_dir(node, 1);
            std::fs::create_dir_all(&folder).expect("folder");
            std::fs::write(folder.join(file), text).expect("write");
        }
        progress.on_event(
            &event(
                None,
                EventKind::RunStarted {
                    workflow: "W".into(),
                    goal: None,
                    run_dir: dir.path().display().to_string(),
                    resumed: false,
                },
            ),
            at,
        );
        progress.on_event(&started("alpha", Some("alpha")), at);
        progress.on_event(&started("beta", Some("beta")), at);
        dir
    }

    #[test]
    fn a_terminal_shows_every_running_stage_with_its_last_output_line() {
        let (progress, screen) = display(true, Gates::Here);
        let at = Instant::now();
        let _dir = run_with_output(&progress, at);
        screen.take();
        progress.tick(at + Duration::from_millis(2500));
        let drawn = screen.take();
        let lines: Vec<&str> = drawn.split('\n').collect();
        assert_eq!(lines.len(), 2, "one line per branch: {drawn:?}");
        assert!(
            lines[0].ends_with("alpha    2.5s  compiling alpha-7"),
            "{drawn:?}"
        );
        assert!(
            lines[1].ends_with("beta     2.5s  testing 90%"),
            "the last redraw of a progress bar, without escapes: {drawn:?}"
        );
        assert!(lines.iter().all(|l| l.chars().count() < 60), "{drawn:?}");
        progress.tick(at + Duration::from_millis(2600));
        assert!(
            screen.take().starts_with("\r\x1b[2K\x1b[1A\x1b[2K"),
            "the next frame erases both lines first"
        );
    }

    #[test]
    fn a_running_agent_shows_its_current_tool_call() {
        let (progress, screen) = display(true, Gates::Here);
        let at = Instant::now();
        let agent = |kind| event(Some("fix"), kind);
        progress.on_event(
            &agent(EventKind::StageStarted {
                handler: "agent".into(),
                attempt: 1,
                branch: None,
            }),
            at,
        );
        let tool = |id: &str, summary: &str| {
            agent(EventKind::AgentToolStarted {
                call_id: id.into(),
                tool: "shell".into(),
                summary: summary.into(),
                arguments: serde_json::json!({}),
            })
        };
        let done = |id: &str| {
            agent(EventKind::AgentToolCompleted {
                call_id: id.into(),
                tool: "shell".into(),
                duration_ms: 5,
                is_error: false,
                preview: String::new(),
                output_bytes: 0,
                touched: Vec::new(),
            })
        };
        progress.on_event(&tool("c1", "cargo build"), at);
        progress.on_event(&tool("c2", "cargo test"), at);
        screen.take();
        progress.tick(at + Duration::from_secs(1));
        assert!(
            screen.take().ends_with("→ shell cargo test"),
            "the newest call"
        );
        progress.on_event(&done("c2"), at);
        progress.tick(at + Duration::from_secs(2));
        assert!(
            screen.take().ends_with("→ shell cargo build"),
            "the one still running"
        );
        progress.on_event(&done("c1"), at);
        progress.tick(at + Duration::from_secs(3));
        assert!(
            !screen.take().contains('→'),
            "no call in flight, none shown"
        );
    }

    #[test]
    fn without_a_terminal_a_long_stage_gets_a_heartbeat_line_now_and_then() {
        let (progress, screen) = display(false, Gates::Here);
        let at = Instant::now();
        let _dir = run_with_output(&progress, at);
        screen.take();
        progress.tick(at + Duration::from_secs(5));
        assert_eq!(screen.take(), "", "nothing before the first heartbeat");
        progress.tick(at + HEARTBEAT);
        assert_eq!(
            screen.take(),
            "  … alpha still running (30.0s): compiling alpha-7\n  … beta still running (30.0s): testing 90%\n"
        );
        progress.tick(at + HEARTBEAT + Duration::from_secs(5));
        assert_eq!(screen.take(), "", "then quiet until the next one");
        progress.tick(at + HEARTBEAT * 2);
        assert_eq!(screen.take().lines().count(), 2);
    }

    #[test]
    fn partial_success_and_skips_are_not_shown_as_success() {
        let (progress, screen) = display(false, Gates::Here);
        for (status, mark) in [
            (Status::PartiallySucceeded, "◐"),
            (Status::Skipped, "–"),
            (Status::Succeeded, "✓"),
        ] {
            progress.on_event(
                &event(
                    Some("fan"),
                    EventKind::StageCompleted {
                        status,
                        duration_ms: 10,
                        attempts: 1,
                        outcome: Outcome::succeeded(),
                    },
                ),
                Instant::now(),
            );
            let line = screen.take();
            assert!(
                line.starts_with(&format!("  {mark} fan")) && line.contains(status.as_str()),
                "{line}"
            );
        }
    }

    #[test]
    fn a_timeout_after_a_prompt_starts_its_own_line() {
        let (progress, screen) = display(false, Gates::Here);
        let asked = event(
            Some("gate"),
            EventKind::InterviewStarted {
                question_id: "Q".into(),
                question: "Ship?".into(),
                options: vec!["[S] Ship".into()],
                freeform: false,
                context: None,
                timeout_ms: Some(1000),
                default_choice: None,
                permission: None,
            },
        );
        progress.on_event(&asked, Instant::now());
        let timeout = event(
            Some("gate"),
            EventKind::InterviewTimeout {
                question_id: "Q".into(),
                default_choice: None,
            },
        );
        progress.on_event(&timeout, Instant::now());
        assert_eq!(screen.take(), "\n  ⏱ gate: no answer in time\n");
        // Answered here: the person's Enter ended the line.
        progress.on_event(&asked, Instant::now());
        progress.prompt_closed();
        progress.on_event(&timeout, Instant::now());
        assert_eq!(screen.take(), "  ⏱ gate: no answer in time\n");
    }

    #[test]
    fn a_waiting_gate_offers_each_option_as_a_shell_word() {
        let question = Question {
            id: "Q1".into(),
            node_id: "approve".into(),
            text: "Ship it?".into(),
            context: Some("line 1\nline 2".into()),
            choices: ["[S] Ship", "Hold it's fine"]
                .into_iter()
                .map(|label| {
                    let (key, text) = parse_accelerator(label);
                    crate::engine::interviewer::Choice {
                        key,
                        label: label.into(),
                        text,
                        target: "x".into(),
                    }
                })
                .collect(),
            freeform: true,
            timeout_ms: None,
            default_choice: None,
        };
        assert_eq!(
            waiting_lines("R1", &question, true),
            "  │ line 1\n  │ line 2\n  ? approve: Ship it?  ([S] Ship | Hold it's fine | any text; no timeout)\n    \
             answer with: weft answer R1 --question Q1 --key S  (or --label 'Hold it'\\''s fine', --text 'your reply')"
        );
    }
}
