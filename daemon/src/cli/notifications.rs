//! `weft notifications pause|resume|status`: weftd's desktop notifications,
//! paused in its memory (`notifications.pause`), so the pause ends when
//! weftd restarts.

use super::exit::{self, CliError, CliResult, EXIT_NOT_RUNNING, EXIT_OK};
use super::{NotificationsAction, NotificationsArgs};
use crate::ipc::client::{Client, ClientError};
use crate::ipc::protocol::NotificationsPause;

/// Runs one `weft notifications` action.
pub fn run(args: &NotificationsArgs) -> CliResult {
    let home = super::home()?;
    let paused = match args.action {
        NotificationsAction::Pause => Some(true),
        NotificationsAction::Resume => Some(false),
        NotificationsAction::Status => None,
    };
    super::block_on(async {
        // Not started for this: a daemon that is not running sends nothing,
        // and one started now would not keep a pause past its next restart
        // anyway.
        let client = match Client::connect(&home).await {
            Ok(client) => client,
            Err(ClientError::DaemonNotRunning { .. }) => {
                if args.json {
                    println!("{{\"running\":false}}");
                } else {
                    println!(
                        "weftd is not running: it alone sends notifications (start it with `weft daemon start`)"
                    );
                }
                return exit::code(EXIT_NOT_RUNNING);
            }
            Err(e) => return Err(CliError::Usage(e.to_string())),
        };
        let state = client
            .call(NotificationsPause { paused })
            .await
            .map_err(|e| CliError::Usage(super::daemon::message(&e)))?;
        if args.json {
            println!("{}", serde_json::json!({ "paused": state.paused }));
        } else {
            println!("{}", sentence(args.action, state.paused));
        }
        exit::code(EXIT_OK)
    })
}

/// What the command says, given the state weftd reported.
fn sentence(action: NotificationsAction, paused: bool) -> &'static str {
    match (action, paused) {
        (NotificationsAction::Pause, _) => {
            "notifications paused until `weft notifications resume` or weftd restarts"
        }
        (NotificationsAction::Resume, _) => "notifications resumed",
        (NotificationsAction::Status, true) => "notifications are paused",
        (NotificationsAction::Status, false) => "notifications are on",
    }
}
