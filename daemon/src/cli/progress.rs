//! Live progress of a run on stderr: one line per finished stage with its
//! status and duration, and on a terminal a spinner for the running stage.
//! Stdout stays free for `--json`.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::engine::event::{Event, EventKind};
use crate::engine::recorder::Observer;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Debug, Default)]
struct State {
    /// The running stage (`node` or `node@visit`) and when it started.
    running: Option<(String, Instant)>,
    frame: usize,
    /// A spinner line is on screen and must be cleared before printing.
    drawn: bool,
    /// A human gate is asking on the terminal: draw nothing.
    paused: bool,
    run_id: String,
}

/// The progress display.
#[derive(Debug, Clone)]
pub struct Progress {
    state: Arc<Mutex<State>>,
    tty: bool,
}

impl Progress {
    /// Progress on stderr, with a spinner when stderr is a terminal.
    #[must_use]
    pub fn stderr() -> Progress {
        Progress {
            state: Arc::default(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The observer to hand to the engine.
    #[must_use]
    pub fn observer(&self) -> Observer {
        let me = self.clone();
        Arc::new(move |event: &Event| me.on_event(event))
    }

    /// Redraws the spinner ten times a second (terminals only).
    #[must_use]
    pub fn spawn_ticker(&self) -> Option<tokio::task::JoinHandle<()>> {
        if !self.tty {
            return None;
        }
        let me = self.clone();
        Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                me.draw_spinner();
            }
        }))
    }

    /// Clears the spinner line.
    pub fn finish(&self) {
        let mut state = self.lock();
        clear(&mut state, self.tty);
    }

    fn draw_spinner(&self) {
        let mut state = self.lock();
        if state.paused {
            return;
        }
        let Some((stage, since)) = state.running.clone() else {
            return;
        };
        state.frame = (state.frame + 1) % FRAMES.len();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K  {} {stage} running {}",
            FRAMES[state.frame],
            seconds(since.elapsed())
        );
        let _ = err.flush();
        state.drawn = true;
    }

    fn on_event(&self, event: &Event) {
        let mut state = self.lock();
        let stage = stage_name(event);
        let line = match &event.kind {
            EventKind::RunStarted {
                run_dir, resumed, ..
            } => {
                state.run_id.clone_from(&event.run_id);
                let verb = if *resumed { "resumed" } else { "started" };
                Some(format!("run {} {verb}\n  run dir: {run_dir}", event.run_id))
            }
            EventKind::StageStarted { attempt, .. } => {
                if *attempt == 1 {
                    state.running = Some((stage, Instant::now()));
                }
                None
            }
            EventKind::StageRetrying {
                attempt,
                delay_ms,
                reason,
            } => Some(format!(
                "  ↻ {stage} attempt {attempt} failed ({reason}); retrying in {}",
                seconds(Duration::from_millis(*delay_ms))
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
                state.running = None;
                let mark = if matches!(event.kind, EventKind::StageFailed { .. }) {
                    "✗"
                } else {
                    "✓"
                };
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
                Some(format!(
                    "  {mark} {stage:<24} {:<20} {:>7}{tries}{reason}",
                    status.as_str(),
                    seconds(Duration::from_millis(*duration_ms))
                ))
            }
            EventKind::InterviewStarted { .. } => {
                clear(&mut state, self.tty);
                state.paused = true;
                None
            }
            EventKind::InterviewCompleted { .. } | EventKind::InterviewInterrupted { .. } => {
                state.paused = false;
                None
            }
            EventKind::InterviewTimeout { default_choice, .. } => {
                state.paused = false;
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
            EventKind::EnvWithheld { names } => Some(withheld_line(names)),
            EventKind::RunCompleted { duration_ms } => Some(format!(
                "run {} succeeded in {}",
                event.run_id,
                seconds(Duration::from_millis(*duration_ms))
            )),
            EventKind::RunFailed {
                reason,
                duration_ms,
            } => Some(format!(
                "run {} failed after {}: {reason}\n  inspect: weft events {} · weft logs {}",
                event.run_id,
                seconds(Duration::from_millis(*duration_ms)),
                event.run_id,
                event.run_id
            )),
            EventKind::RunInterrupted {
                reason,
                duration_ms,
            } => Some(format!(
                "run {} interrupted after {}: {reason}; it resumes when the daemon starts again",
                event.run_id,
                seconds(Duration::from_millis(*duration_ms)),
            )),
            EventKind::RunCancelled {
                reason,
                duration_ms,
            } => Some(format!(
                "run {} cancelled after {}: {reason}\n  continue it with: weft resume {}",
                event.run_id,
                seconds(Duration::from_millis(*duration_ms)),
                event.run_id
            )),
            _ => None,
        };
        if let Some(line) = line {
            clear(&mut state, self.tty);
            eprintln!("{line}");
        }
    }
}

fn clear(state: &mut State, tty: bool) {
    if state.drawn && tty {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
    state.drawn = false;
}

/// `node`, or `node@visit` from the second visit on.
fn stage_name(event: &Event) -> String {
    match (&event.node_id, event.visit) {
        (Some(node), Some(visit)) if visit > 1 => format!("{node}@{visit}"),
        (Some(node), _) => node.clone(),
        (None, _) => String::new(),
    }
}

/// `0.4s`, `12.3s`, `2m05s`.
#[must_use]
pub fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = d.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// The line naming the variables commands do not get (never their values).
fn withheld_line(names: &[String]) -> String {
    format!(
        "  withheld from commands: {} ([run.env] pass in run.toml gives them to steps)",
        names.join(", ")
    )
}
