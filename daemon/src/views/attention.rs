//! What needs the user now, for the desktop app's tray: the waiting gates
//! and the runs in flight; and the app's own settings and tray, as the UI
//! sees them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{Result, Views};
use crate::model::RunStatus;
use crate::store::RunFilter;

/// The waiting gates (the oldest first, at most as many as asked for) and
/// the counts of gates and runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attention {
    pub gates: Vec<WaitingGate>,
    /// Every pending question, listed or not.
    pub gates_total: u64,
    /// Runs executing a stage now (`running`).
    pub running: u64,
    /// Runs not ended: queued, running or waiting at a gate.
    pub active: u64,
}

/// One pending question and where it waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingGate {
    pub run_id: String,
    pub question_id: String,
    /// The run's workflow name.
    pub workflow: String,
    pub question: String,
}

impl Views {
    /// The oldest `max_gates` pending questions with their workflows, and
    /// the counts of pending questions, running and active runs, from one
    /// snapshot.
    pub fn attention(&self, max_gates: u32) -> Result<Attention> {
        let Some(store) = &self.store else {
            return Ok(Attention::default());
        };
        let _tx = store.snapshot()?;
        let (questions, gates_total) = store.pending_questions(max_gates)?;
        let mut gates = Vec::with_capacity(questions.len());
        for q in questions {
            let workflow = store
                .run(&q.run_id)?
                .map_or_else(|| "a workflow".to_string(), |r| r.workflow_name);
            gates.push(WaitingGate {
                run_id: q.run_id,
                question_id: q.id,
                workflow,
                question: q.text,
            });
        }
        let count = |status| {
            store.count_runs(&RunFilter {
                status: Some(status),
                ..RunFilter::default()
            })
        };
        let running = count(RunStatus::Running)?;
        let active = running + count(RunStatus::Queued)? + count(RunStatus::Blocked)?;
        Ok(Attention {
            gates,
            gates_total,
            running,
            active,
        })
    }
}

/// The desktop app's own settings, kept by the app in `$WEFT_HOME/app.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct AppSettings {
    /// Closing the window while runs are active hides it to the tray
    /// instead of quitting.
    pub keep_in_tray: bool,
    /// The app starts, hidden to the tray, when the user logs in (an XDG
    /// autostart entry).
    pub start_at_login: bool,
}

impl Default for AppSettings {
    fn default() -> AppSettings {
        AppSettings {
            keep_in_tray: true,
            start_at_login: false,
        }
    }
}

/// What the app's tray shows, read back from the tray's real menu.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TrayState {
    /// A tray icon was made (false without a tray library).
    pub shown: bool,
    /// A StatusNotifier host runs (the session bus name
    /// `org.kde.StatusNotifierWatcher` has an owner), so the icon is seen;
    /// without one the window does not hide into the tray.
    pub host: bool,
    /// The tooltip the icon was given.
    pub tooltip: String,
    /// The menu's item labels, in order (separators left out).
    pub items: Vec<String>,
    /// The "Pause notifications" item is checked.
    pub paused: bool,
}
