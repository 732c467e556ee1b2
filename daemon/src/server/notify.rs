//! Desktop notifications from the daemon, through the platform's
//! notification service (on Linux the session bus's
//! `org.freedesktop.Notifications`, via notify-rust): when a human gate
//! opens ("Weft: <workflow> needs you — <question>"; for an external
//! agent's permission request "<agent> asks permission to <kind>: <title>"),
//! and when a run fails or completes. Each kind can be turned off in
//! settings.toml, and all of them paused for a while (`notifications.pause`).
//!
//! No notification carries a secret: the text is the workflow's name, the
//! gate's question and the stage's id, never command output or a failure
//! message (which can quote a command's stderr).

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use super::Daemon;
use crate::model::{DeepLink, Event, EventKind};

/// A notification to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    pub summary: String,
    pub body: String,
    /// Where a click opens the app (gate notifications only): the run at
    /// the question, `weft://run/RUN/question/QID`, the app's one argument.
    pub opens: Option<DeepLink>,
}

/// Whether an event of this kind can call for a notification: the run
/// observer sends only these to the notifier. Every kind [`note_for`]
/// writes a note for must be here, or its note is never shown.
#[must_use]
pub(crate) fn notifies(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::InterviewStarted { .. }
            | EventKind::BudgetWarning { .. }
            | EventKind::RunFailed { .. }
            | EventKind::RunCompleted { .. }
    )
}

/// The note to show now for an event taken off the notifier's queue:
/// none while notifications are paused, even for an event recorded
/// before the pause (it waited behind a notification being shown).
#[must_use]
pub(crate) fn note_to_show(
    event: &Event,
    workflow: &str,
    settings: &super::Settings,
    paused: bool,
) -> Option<Note> {
    if paused {
        return None;
    }
    note_for(event, workflow, settings)
}

/// The notification an event calls for, if any, given the run's workflow.
#[must_use]
pub(crate) fn note_for(event: &Event, workflow: &str, settings: &super::Settings) -> Option<Note> {
    match &event.kind {
        EventKind::InterviewStarted {
            question,
            question_id,
            permission,
            ..
        } if settings.notify_gates => Some(Note {
            summary: format!("Weft: {workflow} needs you"),
            // A permission request says what kind of call it is; never its
            // input, which can hold anything the agent read.
            body: match permission {
                Some(p) => format!(
                    "{} asks permission to {}: {}",
                    p.agent, p.tool_kind, p.title
                ),
                None => question.clone(),
            },
            // Ids the engine made always fit a link; one that does not
            // only costs the click.
            opens: DeepLink::question(&event.run_id, question_id).ok(),
        }),
        // A run nearing its budget: the person who set it wants to know
        // before it pauses.
        EventKind::BudgetWarning { message, .. } if settings.notify_gates => Some(Note {
            summary: format!("Weft: {workflow} is nearing its budget"),
            body: format!("Run {}: {message}", short(&event.run_id)),
            opens: None,
        }),
        EventKind::RunFailed { .. } if settings.notify_failures => Some(Note {
            summary: format!("Weft: {workflow} failed"),
            body: match &event.node_id {
                Some(node) => format!("Run {} stopped at {node}.", short(&event.run_id)),
                None => format!("Run {} failed.", short(&event.run_id)),
            },
            opens: None,
        }),
        EventKind::RunCompleted { .. } if settings.notify_completions => Some(Note {
            summary: format!("Weft: {workflow} finished"),
            body: format!("Run {} succeeded.", short(&event.run_id)),
            opens: None,
        }),
        _ => None,
    }
}

fn short(run_id: &str) -> &str {
    run_id.get(..10).unwrap_or(run_id)
}

/// How many events may wait to be shown; more are dropped (a
/// notification service that has stopped answering must not make weftd
/// hold every event of every run).
pub(crate) const QUEUE: usize = 64;

/// Shows notifications for the events sent to the returned channel (at
/// most [`QUEUE`] waiting). The D-Bus call blocks, so it runs on the
/// blocking pool; a missing notification service (a headless machine) is
/// not an error worth more than one log line per daemon start (see
/// [`FailureLog`]).
pub fn spawn(daemon: &Rc<Daemon>) -> mpsc::Sender<Event> {
    let (tx, mut rx) = mpsc::channel::<Event>(QUEUE);
    let daemon = daemon.clone();
    tokio::task::spawn_local(async move {
        let mut failures = FailureLog::default();
        while let Some(event) = rx.recv().await {
            let workflow = daemon
                .store()
                .run(&event.run_id)
                .ok()
                .flatten()
                .map_or_else(|| "a workflow".to_string(), |r| r.workflow_name);
            // Checked again here: the observer checks the pause when the
            // event is recorded, but one queued before the pause must not
            // be shown during it.
            let paused = daemon.notifications_paused.load(Ordering::Relaxed);
            let Some(note) = note_to_show(&event, &workflow, &daemon.settings, paused) else {
                continue;
            };
            let app = daemon.settings.desktop_app();
            let shown = tokio::task::spawn_blocking(move || show(note, app)).await;
            if let Ok(Err(e)) = shown
                && let Some(line) = failures.record(&e)
            {
                eprintln!("{line}");
            }
        }
    });
    tx
}

/// The log of notifications that could not be shown: the first failure is
/// logged, later ones are only counted, since on a machine without a
/// notification service every notification fails the same way.
#[derive(Debug, Default)]
pub(crate) struct FailureLog {
    failures: u64,
}

impl FailureLog {
    /// The log line for a failure to show a notification, the first time
    /// only.
    pub fn record(&mut self, error: &str) -> Option<String> {
        self.failures += 1;
        (self.failures == 1).then(|| {
            format!(
                "weftd: notification not shown: {error} (further failures to show notifications \
                 are not logged until weftd restarts; turn them off with notify_gates, \
                 notify_failures and notify_completions in settings.toml)"
            )
        })
    }
}

/// Shows `note`. A gate's notification gets a default action ("Open in
/// Weft"); a thread waits for it (until the notification is clicked,
/// dismissed or expires) and then starts `app` with the question's link.
fn show(note: Note, app: Option<PathBuf>) -> Result<(), String> {
    let mut notification = notify_rust::Notification::new();
    notification
        .appname("Weft")
        .summary(&note.summary)
        .body(&note.body);
    let opens = note.opens.zip(app);
    if opens.is_some() {
        notification.action("default", "Open in Weft");
    }
    let handle = notification.show().map_err(|e| e.to_string())?;
    if let Some((link, app)) = opens {
        std::thread::spawn(move || {
            handle.wait_for_action(|action| {
                if action == "default" {
                    open_app(&app, &link);
                }
            });
        });
    }
    Ok(())
}

/// Starts the app with `link` as its one argument (see
/// [`super::start_desktop_app`]) and reaps it when it exits.
fn open_app(app: &Path, link: &DeepLink) {
    match super::start_desktop_app(app, link) {
        Ok(mut child) => {
            let _ = child.wait();
        }
        Err(e) => eprintln!("weftd: cannot open the app {}: {e}", app.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 1,
            ts: String::new(),
            run_id: "01ABCDEFGHJKMNPQRSTVWXYZ00".into(),
            node_id: Some("deploy".into()),
            visit: Some(1),
            kind,
        }
    }

    #[test]
    fn a_failure_to_show_notifications_is_logged_once() {
        let mut log = FailureLog::default();
        let first = log.record("no session bus");
        assert!(first.is_some_and(|l| l.contains("no session bus")));
        for _ in 0..52 {
            assert_eq!(log.record("no session bus"), None);
        }
    }

    #[test]
    fn a_gate_names_the_workflow_and_asks_its_question() {
        let note = note_for(
            &event(gate_opened()),
            "Release",
            &super::super::Settings::default(),
        );
        assert_eq!(
            note,
            Some(Note {
                summary: "Weft: Release needs you".into(),
                body: "Ship it?".into(),
                opens: DeepLink::parse("run/01ABCDEFGHJKMNPQRSTVWXYZ00/question/Q").ok(),
            })
        );
        assert_eq!(
            note.and_then(|n| n.opens).map(|l| l.url()).as_deref(),
            Some("weft://run/01ABCDEFGHJKMNPQRSTVWXYZ00/question/Q"),
            "the click starts the app with the question's link"
        );
    }

    #[test]
    fn a_permission_request_names_the_agent_and_the_kind_but_not_the_input() {
        let permission = crate::model::PermissionAsk {
            agent: "claude".into(),
            tool_kind: "execute".into(),
            title: "Run cargo publish".into(),
            locations: Vec::new(),
            command: Some("cargo publish --token hunter2".into()),
            input: Some("{\"command\": \"cargo publish --token hunter2\"}".into()),
            options: Vec::new(),
        };
        let note = note_for(
            &event(EventKind::InterviewStarted {
                question_id: "Q".into(),
                question: "claude asks permission: Run cargo publish".into(),
                options: vec!["Allow".into(), "Reject".into()],
                freeform: false,
                context: Some("The agent claude wants to execute".into()),
                timeout_ms: None,
                default_choice: None,
                permission: Some(permission),
            }),
            "Release",
            &super::super::Settings::default(),
        )
        .expect("note");
        assert_eq!(note.summary, "Weft: Release needs you");
        assert_eq!(
            note.body,
            "claude asks permission to execute: Run cargo publish"
        );
        assert!(note.opens.is_some());
    }

    #[test]
    fn failures_never_quote_the_failure_message_and_kinds_can_be_turned_off() {
        let failed = event(EventKind::RunFailed {
            reason: "command exited with status 1: TOKEN=hunter2".into(),
            duration_ms: 5,
        });
        let note = note_for(&failed, "Release", &super::super::Settings::default()).expect("note");
        assert!(!note.body.contains("hunter2") && !note.summary.contains("hunter2"));
        let quiet = super::super::Settings {
            notify_failures: false,
            ..super::super::Settings::default()
        };
        assert_eq!(note_for(&failed, "Release", &quiet), None);
    }

    #[test]
    fn a_budget_warning_names_the_workflow_and_the_spend() {
        let warning = event(EventKind::BudgetWarning {
            limit: "run.cost".into(),
            max: 5.0,
            spent: 4.1,
            message: "Budget $4.10 spent of $5.00 (82%, warning at 80%)".into(),
        });
        let note = note_for(&warning, "Release", &super::super::Settings::default()).expect("note");
        assert_eq!(note.summary, "Weft: Release is nearing its budget");
        assert!(note.body.contains("$4.10 spent of $5.00"), "{}", note.body);
        assert!(note.opens.is_none());
    }

    /// A gate opening on "Ship it?".
    fn gate_opened() -> EventKind {
        EventKind::InterviewStarted {
            question_id: "Q".into(),
            question: "Ship it?".into(),
            options: vec!["[Y] Yes".into()],
            freeform: false,
            context: None,
            timeout_ms: None,
            default_choice: None,
            permission: None,
        }
    }

    /// One event of each kind [`note_for`] writes a note for, and some it
    /// does not.
    fn sample_kinds() -> Vec<EventKind> {
        vec![
            gate_opened(),
            EventKind::BudgetWarning {
                limit: "run.cost".into(),
                max: 5.0,
                spent: 4.1,
                message: "Budget $4.10 spent of $5.00".into(),
            },
            EventKind::RunFailed {
                reason: "exit 1".into(),
                duration_ms: 5,
            },
            EventKind::RunCompleted {
                duration_ms: 5,
                failed_stages: Vec::new(),
                exit_node: None,
            },
            EventKind::RunCancelled {
                reason: "asked".into(),
                duration_ms: 5,
            },
            EventKind::RunInterrupted {
                reason: "stop".into(),
                duration_ms: 5,
            },
            EventKind::RunNotice {
                message: "note".into(),
            },
            EventKind::SandboxRemoved {
                container: "c".into(),
            },
        ]
    }

    #[test]
    fn every_event_with_a_note_reaches_the_notifier_including_budget_warnings() {
        let settings = super::super::Settings::default();
        let mut noted = Vec::new();
        for kind in sample_kinds() {
            let has_note = note_for(&event(kind.clone()), "Release", &settings).is_some();
            assert!(
                !has_note || notifies(&kind),
                "{kind:?} has a note but the observer would never send it"
            );
            if has_note {
                noted.push(kind.name());
            }
        }
        assert_eq!(
            noted,
            [
                "interview.started",
                "budget.warning",
                "run.failed",
                "run.completed"
            ],
            "the kinds docs/cli.md `weft notifications` lists"
        );
        assert!(!notifies(&EventKind::RunNotice {
            message: "note".into()
        }));
    }

    #[test]
    fn nothing_is_shown_while_paused_even_an_event_queued_before_the_pause() {
        let settings = super::super::Settings::default();
        for kind in sample_kinds() {
            let queued = event(kind);
            assert_eq!(note_to_show(&queued, "Release", &settings, true), None);
            assert_eq!(
                note_to_show(&queued, "Release", &settings, false),
                note_for(&queued, "Release", &settings),
                "after the pause, the same notes as before it"
            );
        }
    }
}
